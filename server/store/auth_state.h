// etcd's auth store (auth/store.go, auth/range_perm_cache.go) as the store's state: users with bcrypt
// password hashes and roles, roles with key permissions, the enabled flag and the auth revision, and the
// permission checks etcd makes.
//
// The state is one revkv.v1.AuthState, kept encoded in MetaState::auth (meta_state.h) and changed only by
// logged auth changes (ApplyAuthChange, inside the store's write transactions), so it is logged,
// checkpointed and replayed like every other write. An AuthView is one auth revision's state decoded,
// with each user's permissions merged from its roles into sorted interval lists (etcd's
// unifiedRangePermissions); views are immutable and shared, so checks never decode anything twice.
//
// Intervals follow etcd's "bytes affine" order: an empty key stands for +infinity, so a permission or a
// request [key, range_end) with range_end "\0" reaches to the end of the key space, one with no
// range_end is the single key [key, key + "\0").
//
// Thread-safety: AuthView is const-safe only (immutable after Decode); the functions are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "revkv/v1/store.pb.h"

namespace revkv::server {

// Who makes a request, as the RPC layer resolved it (server/rpc/identity.h): the user of its token, or
// the CommonName of its client certificate, or nobody.
struct AuthInfo {
  std::string user;  // empty: no user
};

}  // namespace revkv::server

namespace revkv::server::store {

inline constexpr std::string_view kRootUser = "root";
inline constexpr std::string_view kRootRole = "root";

// One auth revision's state, decoded. Immutable.
class AuthView {
 public:
  // Decodes MetaState::auth bytes (empty: no user, no role, auth off, revision 1). DataLoss for bytes
  // that do not decode.
  static absl::StatusOr<std::shared_ptr<const AuthView>> Decode(std::string_view bytes);
  // The view of `state` (already decoded).
  static std::shared_ptr<const AuthView> Of(revkv::v1::AuthState state);

  bool enabled() const { return state_.enabled(); }
  uint64_t revision() const { return state_.revision(); }
  const revkv::v1::AuthState& state() const { return state_; }
  const authpb::User* FindUser(std::string_view name) const;
  const authpb::Role* FindRole(std::string_view name) const;
  bool HasRole(std::string_view user, std::string_view role) const;

  // etcd's isOpPermitted for [key, range_end) (etcd's request form: range_end empty for one key, "\0" for
  // every key from `key` on): OK while auth is disabled or for a user with the root role; else etcd's
  // "user name is empty" (no user), "permission denied" (an unknown user, or one whose roles' permissions
  // of that kind do not cover the whole range; a single key needs one permission holding it).
  absl::Status CheckRange(const AuthInfo& who, std::string_view key, std::string_view range_end,
                          bool write) const;
  // etcd's IsAdminPermitted: OK while auth is disabled; else "user name is empty", "user name not found",
  // or "permission denied" for a user without the root role.
  absl::Status CheckAdmin(const AuthInfo& who) const;
  // Any existing user (revkv's checks where etcd has none, docs/server.md): OK while auth is disabled;
  // else "user name is empty" or "permission denied" for an unknown user.
  absl::Status CheckUser(const AuthInfo& who) const;

 private:
  struct Interval {
    std::string begin;  // empty: +infinity (an empty interval)
    std::string end;    // empty: +infinity
  };
  struct Permissions {
    bool root = false;
    std::vector<Interval> read;   // sorted by begin
    std::vector<Interval> write;  // sorted by begin
  };
  explicit AuthView(revkv::v1::AuthState state);
  static bool Covers(const std::vector<Interval>& intervals, std::string_view key,
                     std::string_view range_end);

  revkv::v1::AuthState state_;
  std::map<std::string, Permissions, std::less<>> users_;
};

// Applies `change` to `state` as etcd's auth store applies it (auth/store.go), with its errors: user and
// role names must be given and unique; the root user and the root role cannot be deleted, nor the root
// role revoked from the root user, while auth is enabled ("invalid auth management"); AuthEnable needs a
// root user with the root role. Sets `*changed` to false for a change that leaves the state as it was
// (AuthEnable when enabled, a role granted twice): nothing is then written. Appends to `*invalidated` the
// users whose tokens a change must invalidate (deleted, password changed; every user for AuthDisable,
// as "" (no user has an empty name). The auth revision is advanced as etcd advances it (by every change but
// AuthEnable).
absl::Status ApplyAuthChange(const revkv::v1::AuthChange& change, revkv::v1::AuthState* state, bool* changed,
                             std::vector<std::string>* invalidated);

// The deterministic encoding of `state` (checkpoints and hashes compare bytes).
std::string EncodeAuthState(const revkv::v1::AuthState& state);

// The state of a new store: no user, no role, auth off, revision 1 (etcd's first commitRevision).
revkv::v1::AuthState InitialAuthState();

}  // namespace revkv::server::store
