// etcd's Auth service (etcdserverpb.Auth): enabling and disabling authentication, simple tokens
// (Authenticate), users and roles with their key permissions, as etcd 3.4 answers them (plus AuthStatus,
// etcd 3.5's). The state is the store's (store/auth_state.h): every change is a logged write answered once
// durable; reads answer from the visible state.
//
// A synchronous service: its handlers run on gRPC's own threads, registered with the runtime for the
// duration of a call, because a password check or hash takes tens of milliseconds (bcrypt) and must not
// hold a worker. Who may call what is etcd's: the root role for every change and for listing users and
// roles; UserGet also for the user itself, RoleGet also for a user holding the role; Authenticate and
// AuthStatus for anyone.
//
// Thread-safety: thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "server/rpc/server_state.h"

namespace revkv::server {

class AuthService final : public etcdserverpb::Auth::Service {
 public:
  explicit AuthService(ServerState* state) : state_(state) {}

  grpc::Status AuthEnable(grpc::ServerContext* context, const etcdserverpb::AuthEnableRequest* request,
                          etcdserverpb::AuthEnableResponse* response) override;
  grpc::Status AuthDisable(grpc::ServerContext* context, const etcdserverpb::AuthDisableRequest* request,
                           etcdserverpb::AuthDisableResponse* response) override;
  grpc::Status AuthStatus(grpc::ServerContext* context, const etcdserverpb::AuthStatusRequest* request,
                          etcdserverpb::AuthStatusResponse* response) override;
  grpc::Status Authenticate(grpc::ServerContext* context, const etcdserverpb::AuthenticateRequest* request,
                            etcdserverpb::AuthenticateResponse* response) override;
  grpc::Status UserAdd(grpc::ServerContext* context, const etcdserverpb::AuthUserAddRequest* request,
                       etcdserverpb::AuthUserAddResponse* response) override;
  grpc::Status UserGet(grpc::ServerContext* context, const etcdserverpb::AuthUserGetRequest* request,
                       etcdserverpb::AuthUserGetResponse* response) override;
  grpc::Status UserList(grpc::ServerContext* context, const etcdserverpb::AuthUserListRequest* request,
                        etcdserverpb::AuthUserListResponse* response) override;
  grpc::Status UserDelete(grpc::ServerContext* context, const etcdserverpb::AuthUserDeleteRequest* request,
                          etcdserverpb::AuthUserDeleteResponse* response) override;
  grpc::Status UserChangePassword(grpc::ServerContext* context,
                                  const etcdserverpb::AuthUserChangePasswordRequest* request,
                                  etcdserverpb::AuthUserChangePasswordResponse* response) override;
  grpc::Status UserGrantRole(grpc::ServerContext* context,
                             const etcdserverpb::AuthUserGrantRoleRequest* request,
                             etcdserverpb::AuthUserGrantRoleResponse* response) override;
  grpc::Status UserRevokeRole(grpc::ServerContext* context,
                              const etcdserverpb::AuthUserRevokeRoleRequest* request,
                              etcdserverpb::AuthUserRevokeRoleResponse* response) override;
  grpc::Status RoleAdd(grpc::ServerContext* context, const etcdserverpb::AuthRoleAddRequest* request,
                       etcdserverpb::AuthRoleAddResponse* response) override;
  grpc::Status RoleGet(grpc::ServerContext* context, const etcdserverpb::AuthRoleGetRequest* request,
                       etcdserverpb::AuthRoleGetResponse* response) override;
  grpc::Status RoleList(grpc::ServerContext* context, const etcdserverpb::AuthRoleListRequest* request,
                        etcdserverpb::AuthRoleListResponse* response) override;
  grpc::Status RoleDelete(grpc::ServerContext* context, const etcdserverpb::AuthRoleDeleteRequest* request,
                          etcdserverpb::AuthRoleDeleteResponse* response) override;
  grpc::Status RoleGrantPermission(grpc::ServerContext* context,
                                   const etcdserverpb::AuthRoleGrantPermissionRequest* request,
                                   etcdserverpb::AuthRoleGrantPermissionResponse* response) override;
  grpc::Status RoleRevokePermission(grpc::ServerContext* context,
                                    const etcdserverpb::AuthRoleRevokePermissionRequest* request,
                                    etcdserverpb::AuthRoleRevokePermissionResponse* response) override;

 private:
  // Applies `change` for the caller of `context` (a logged write), waits until it is durable and the new
  // auth state is in effect, and fills `header`. The thread must be registered.
  grpc::Status Change(grpc::ServerContext* context, const revkv::v1::AuthChange& change,
                      etcdserverpb::ResponseHeader* header);
  // The visible revision's header.
  void FillHeader(etcdserverpb::ResponseHeader* header);

  ServerState* state_;
};

}  // namespace revkv::server
