// Who a call comes from (identity.h).
#include "server/rpc/identity.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>

#include <string>

#include "server/auth/simple_token.h"
#include "server/store/errors.h"

namespace revkv::server {

namespace {

// The first value of metadata field `name`, if the call has it.
const grpc::string_ref* FirstValue(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                                   std::string_view name) {
  auto it = metadata.find(grpc::string_ref(name.data(), name.size()));
  return it == metadata.end() ? nullptr : &it->second;
}

}  // namespace

Credentials CredentialsOf(const grpc::ServerContextBase& context, const ServerState* state) {
  Credentials out;
  const auto& metadata = context.client_metadata();
  const grpc::string_ref* token = FirstValue(metadata, "token");
  if (token == nullptr) token = FirstValue(metadata, "authorization");
  if (token != nullptr) {
    out.token = std::string(token->data(), token->size());
    return out;
  }
  if (state->config->tls.client_cert_auth && FirstValue(metadata, "grpcgateway-accept") == nullptr) {
    std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth != nullptr && auth->IsPeerAuthenticated()) {
      const std::vector<grpc::string_ref> names = auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
      if (!names.empty()) out.common_name = std::string(names.front().data(), names.front().size());
    }
  }
  return out;
}

absl::StatusOr<AuthInfo> Identify(const Credentials& credentials, ServerState* state) {
  if (credentials.token.has_value()) {
    std::optional<std::string> user =
        state->tokens != nullptr ? state->tokens->Lookup(*credentials.token) : std::nullopt;
    if (!user.has_value()) return errors::InvalidAuthToken();
    return AuthInfo{*std::move(user)};
  }
  if (credentials.common_name.has_value()) return AuthInfo{*credentials.common_name};
  return AuthInfo{};
}

absl::StatusOr<AuthInfo> Identify(const grpc::ServerContextBase& context, ServerState* state) {
  return Identify(CredentialsOf(context, state), state);
}

}  // namespace revkv::server
