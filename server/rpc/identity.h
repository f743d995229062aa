// Who a call comes from (etcd's AuthInfoFromCtx and AuthInfoFromTLS): the user of the simple token in its
// metadata ("token", or "authorization" as etcd's gateway sends it); without a token and with
// --client-cert-auth, the CommonName of its verified client certificate (unless the call came through a
// gRPC gateway: etcd then ignores it); else nobody (an empty user).
//
// Thread-safety: thread-safe; never touches the heap (gRPC's callback threads call it).
#pragma once

#include <grpcpp/grpcpp.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "server/rpc/server_state.h"
#include "server/store/auth_state.h"

namespace revkv::server {

// What a call presents: its token, or the CommonName of its verified client certificate (only with
// --client-cert-auth). Copied out of the call, so a stream can keep it.
struct Credentials {
  std::optional<std::string> token;
  std::optional<std::string> common_name;
};

// The credentials of `context` (call it on the thread serving the call).
Credentials CredentialsOf(const grpc::ServerContextBase& context, const ServerState* state);

// The caller presenting `credentials`. etcd's "invalid auth token" (Unauthenticated) for a token that
// names no user: one that does not parse, was never handed out, has expired, or was invalidated (its user
// deleted or its password changed, or authentication disabled). Renews the token.
absl::StatusOr<AuthInfo> Identify(const Credentials& credentials, ServerState* state);

// Identify(CredentialsOf(context)).
absl::StatusOr<AuthInfo> Identify(const grpc::ServerContextBase& context, ServerState* state);

}  // namespace revkv::server
