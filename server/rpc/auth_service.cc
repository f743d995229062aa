// The Auth service (auth_service.h).
#include "server/rpc/auth_service.h"

#include "runtime/safepoint/safepoint.h"
#include "server/auth/password.h"
#include "server/auth/simple_token.h"
#include "server/rpc/identity.h"
#include "server/rpc/status.h"
#include "server/store/errors.h"
#include "spdlog/spdlog.h"

namespace revkv::server {

namespace {

using revkv::v1::AuthChange;

// The caller, or the status that refuses the call.
#define REVKV_IDENTIFY(who, context)                                \
  absl::StatusOr<AuthInfo> who##_or = Identify(*(context), state_); \
  if (!who##_or.ok()) return ToGrpc(who##_or.status());             \
  const AuthInfo& who = *who##_or

}  // namespace

void AuthService::FillHeader(etcdserverpb::ResponseHeader* header) {
  state_->FillHeader(header);
  header->set_revision(state_->engine->store().VisibleRevision());
}

grpc::Status AuthService::Change(grpc::ServerContext* context, const AuthChange& change,
                                 etcdserverpb::ResponseHeader* header) {
  REVKV_IDENTIFY(who, context);
  Store& store = state_->engine->store();
  absl::StatusOr<WriteResult<revkv::v1::AuthChangeResponse>> written = store.AuthChange(change, &who);
  if (!written.ok()) return ToGrpc(written.status());
  if (absl::Status durable = store.WaitDurable(written->lsn); !durable.ok()) return ToGrpc(durable);
  // In effect before the answer: the next request of anyone meets the new state (reads, Watch streams).
  store.RefreshAuth();
  if (written->lsn != 0) {
    spdlog::info("auth: {} by '{}' at revision {}",
                 AuthChange::descriptor()->FindFieldByNumber(change.request_case())->name(), who.user,
                 written->revision);
  }
  state_->FillHeader(header);
  header->set_revision(written->response.header().revision());
  return grpc::Status::OK;
}

grpc::Status AuthService::AuthEnable(grpc::ServerContext* context,
                                     const etcdserverpb::AuthEnableRequest* request,
                                     etcdserverpb::AuthEnableResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_enable() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::AuthDisable(grpc::ServerContext* context,
                                      const etcdserverpb::AuthDisableRequest* request,
                                      etcdserverpb::AuthDisableResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_disable() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::AuthStatus(grpc::ServerContext*, const etcdserverpb::AuthStatusRequest*,
                                     etcdserverpb::AuthStatusResponse* response) {
  const std::shared_ptr<const store::AuthView> view = state_->engine->store().VisibleAuth();
  FillHeader(response->mutable_header());
  response->set_enabled(view->enabled());
  response->set_authrevision(view->revision());
  return grpc::Status::OK;
}

grpc::Status AuthService::Authenticate(grpc::ServerContext*, const etcdserverpb::AuthenticateRequest* request,
                                       etcdserverpb::AuthenticateResponse* response) {
  // The caller's own token is not looked at: Authenticate is how a client whose token expired gets a new
  // one (etcd refuses a call carrying a stale token here too; its clients authenticate afresh anyway).
  const std::shared_ptr<const store::AuthView> view = state_->engine->store().VisibleAuth();
  if (!view->enabled()) return ToGrpc(errors::AuthNotEnabled());
  const authpb::User* user = view->FindUser(request->name());
  if (user == nullptr) {
    spdlog::warn("authentication failed: no user '{}'", request->name());
    return ToGrpc(errors::AuthFailed());
  }
  if (user->options().no_password()) return ToGrpc(errors::NoPasswordUser());
  if (!auth::CheckPassword(request->password(), user->password())) {
    spdlog::warn("authentication failed: wrong password for user '{}'", request->name());
    return ToGrpc(errors::AuthFailed());
  }
  // The user may have been deleted or its password changed while the hash was compared: etcd retries
  // until the auth revision held still. The state is checked again here; a token handed out just before
  // an invalidation is taken back by it.
  const std::shared_ptr<const store::AuthView> now = state_->engine->store().VisibleAuth();
  const authpb::User* still = now->FindUser(request->name());
  if (!now->enabled() || still == nullptr || still->password() != user->password()) {
    return ToGrpc(errors::AuthFailed());
  }
  FillHeader(response->mutable_header());
  response->set_token(state_->tokens->Assign(request->name(), response->header().revision()));
  return grpc::Status::OK;
}

grpc::Status AuthService::UserAdd(grpc::ServerContext* context,
                                  const etcdserverpb::AuthUserAddRequest* request,
                                  etcdserverpb::AuthUserAddResponse* response) {
  runtime::ThreadRegistration registration("auth");
  {
    // Refused callers pay no bcrypt; the store checks again in the change's transaction.
    REVKV_IDENTIFY(who, context);
    if (absl::Status s = state_->engine->store().VisibleAuth()->CheckAdmin(who); !s.ok()) return ToGrpc(s);
  }
  AuthChange change;
  etcdserverpb::AuthUserAddRequest* add = change.mutable_user_add();
  *add = *request;
  if (!(request->has_options() && request->options().no_password())) {
    absl::StatusOr<std::string> hash = [&] {
      runtime::SafeRegion hashing;  // tens of milliseconds; no heap access
      return auth::HashPassword(request->password(), state_->config->bcrypt_cost);
    }();
    if (!hash.ok()) return ToGrpc(hash.status());
    add->set_password(*hash);
  } else {
    add->clear_password();
  }
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::UserGet(grpc::ServerContext* context,
                                  const etcdserverpb::AuthUserGetRequest* request,
                                  etcdserverpb::AuthUserGetResponse* response) {
  REVKV_IDENTIFY(who, context);
  const std::shared_ptr<const store::AuthView> view = state_->engine->store().VisibleAuth();
  // etcd: the root role, or the user asking about itself.
  if (absl::Status s = view->CheckAdmin(who); !s.ok() && request->name() != who.user) return ToGrpc(s);
  const authpb::User* user = view->FindUser(request->name());
  if (user == nullptr) return ToGrpc(errors::UserNotFound());
  FillHeader(response->mutable_header());
  for (const std::string& role : user->roles()) response->add_roles(role);
  return grpc::Status::OK;
}

grpc::Status AuthService::UserList(grpc::ServerContext* context, const etcdserverpb::AuthUserListRequest*,
                                   etcdserverpb::AuthUserListResponse* response) {
  REVKV_IDENTIFY(who, context);
  const std::shared_ptr<const store::AuthView> view = state_->engine->store().VisibleAuth();
  if (absl::Status s = view->CheckAdmin(who); !s.ok()) return ToGrpc(s);
  FillHeader(response->mutable_header());
  for (const authpb::User& user : view->state().users()) response->add_users(user.name());
  return grpc::Status::OK;
}

grpc::Status AuthService::UserDelete(grpc::ServerContext* context,
                                     const etcdserverpb::AuthUserDeleteRequest* request,
                                     etcdserverpb::AuthUserDeleteResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_user_delete() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::UserChangePassword(grpc::ServerContext* context,
                                             const etcdserverpb::AuthUserChangePasswordRequest* request,
                                             etcdserverpb::AuthUserChangePasswordResponse* response) {
  runtime::ThreadRegistration registration("auth");
  {
    REVKV_IDENTIFY(who, context);
    if (absl::Status s = state_->engine->store().VisibleAuth()->CheckAdmin(who); !s.ok()) return ToGrpc(s);
  }
  absl::StatusOr<std::string> hash = [&] {
    runtime::SafeRegion hashing;
    return auth::HashPassword(request->password(), state_->config->bcrypt_cost);
  }();
  if (!hash.ok()) return ToGrpc(hash.status());
  AuthChange change;
  *change.mutable_user_change_password() = *request;
  change.mutable_user_change_password()->set_password(*hash);
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::UserGrantRole(grpc::ServerContext* context,
                                        const etcdserverpb::AuthUserGrantRoleRequest* request,
                                        etcdserverpb::AuthUserGrantRoleResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_user_grant_role() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::UserRevokeRole(grpc::ServerContext* context,
                                         const etcdserverpb::AuthUserRevokeRoleRequest* request,
                                         etcdserverpb::AuthUserRevokeRoleResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_user_revoke_role() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::RoleAdd(grpc::ServerContext* context,
                                  const etcdserverpb::AuthRoleAddRequest* request,
                                  etcdserverpb::AuthRoleAddResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_role_add() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::RoleGet(grpc::ServerContext* context,
                                  const etcdserverpb::AuthRoleGetRequest* request,
                                  etcdserverpb::AuthRoleGetResponse* response) {
  REVKV_IDENTIFY(who, context);
  const std::shared_ptr<const store::AuthView> view = state_->engine->store().VisibleAuth();
  // etcd: the root role, or a user holding the role asked about.
  if (absl::Status s = view->CheckAdmin(who); !s.ok() && !view->HasRole(who.user, request->role())) {
    return ToGrpc(s);
  }
  const authpb::Role* role = view->FindRole(request->role());
  if (role == nullptr) return ToGrpc(errors::RoleNotFound());
  FillHeader(response->mutable_header());
  for (const authpb::Permission& p : role->keypermission()) *response->add_perm() = p;
  return grpc::Status::OK;
}

grpc::Status AuthService::RoleList(grpc::ServerContext* context, const etcdserverpb::AuthRoleListRequest*,
                                   etcdserverpb::AuthRoleListResponse* response) {
  REVKV_IDENTIFY(who, context);
  const std::shared_ptr<const store::AuthView> view = state_->engine->store().VisibleAuth();
  if (absl::Status s = view->CheckAdmin(who); !s.ok()) return ToGrpc(s);
  FillHeader(response->mutable_header());
  for (const authpb::Role& role : view->state().roles()) response->add_roles(role.name());
  return grpc::Status::OK;
}

grpc::Status AuthService::RoleDelete(grpc::ServerContext* context,
                                     const etcdserverpb::AuthRoleDeleteRequest* request,
                                     etcdserverpb::AuthRoleDeleteResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_role_delete() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::RoleGrantPermission(grpc::ServerContext* context,
                                              const etcdserverpb::AuthRoleGrantPermissionRequest* request,
                                              etcdserverpb::AuthRoleGrantPermissionResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_role_grant_permission() = *request;
  return Change(context, change, response->mutable_header());
}

grpc::Status AuthService::RoleRevokePermission(grpc::ServerContext* context,
                                               const etcdserverpb::AuthRoleRevokePermissionRequest* request,
                                               etcdserverpb::AuthRoleRevokePermissionResponse* response) {
  runtime::ThreadRegistration registration("auth");
  AuthChange change;
  *change.mutable_role_revoke_permission() = *request;
  return Change(context, change, response->mutable_header());
}

}  // namespace revkv::server
