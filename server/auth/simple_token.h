// etcd's simple tokens (auth/simple_token.go): "<16 random letters>.<index>", handed out by Authenticate
// and sent back by clients in the gRPC metadata field "token". A token names a user until it has not
// been used for its TTL (each use renews it), until the user is deleted or its password changed, or
// until authentication is disabled; tokens are kept in memory only (a restart invalidates them all, as
// etcd's).
//
// Thread-safety: ParseSimpleToken is thread-safe; SimpleTokens is thread-safe (one leaf mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace revkv::server::auth {

inline constexpr size_t kSimpleTokenLetters = 16;  // etcd's defaultSimpleTokenLength

// A token's parts.
struct SimpleToken {
  std::string_view prefix;  // the random letters (any bytes before the dot, as etcd accepts them)
  int64_t index = 0;
};

// etcd's isValidSimpleToken: exactly one '.', and after it a decimal integer as Go's strconv.Atoi takes
// it (an optional sign, then digits, within 64 bits). nullopt for anything else. Never allocates.
std::optional<SimpleToken> ParseSimpleToken(std::string_view token);

class SimpleTokens {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // `ttl`: etcd's --auth-token-ttl (300 s by default). `clock` for tests; null: the steady clock.
  explicit SimpleTokens(std::chrono::seconds ttl, Clock clock = nullptr);

  // A new token for `user`, "<16 letters from a cryptographic random source>.<index>" (etcd uses the raft
  // index of the Authenticate; revkv the store revision it was answered at).
  std::string Assign(const std::string& user, int64_t index);
  // The user `token` names, renewing it; nullopt for a token that does not parse, was never handed out,
  // has expired or was invalidated.
  std::optional<std::string> Lookup(std::string_view token);
  // Invalidates every token of `user` ("": every token: no user has an empty name).
  void InvalidateUser(const std::string& user);
  size_t size() const;

 private:
  struct Entry {
    std::string user;
    std::chrono::steady_clock::time_point expires;
  };
  std::chrono::steady_clock::time_point Now() const;
  void RemoveExpiredLocked(std::chrono::steady_clock::time_point now);

  const std::chrono::seconds ttl_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> tokens_;  // under mu_
  uint64_t assigned_ = 0;                             // under mu_: expired tokens are swept every 64
};

}  // namespace revkv::server::auth
