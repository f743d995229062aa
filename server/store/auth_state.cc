// etcd's auth store as state: decoding, permission checks, changes (auth_state.h).
#include "server/store/auth_state.h"

#include <algorithm>
#include <utility>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/store/errors.h"

namespace revkv::server::store {

namespace {

using revkv::v1::AuthChange;
using revkv::v1::AuthState;

// etcd's BytesAffineComparable: an empty bound is +infinity.
bool Less(std::string_view a, std::string_view b) {
  if (a.empty()) return false;
  if (b.empty()) return true;
  return a < b;
}
bool LessOrEqual(std::string_view a, std::string_view b) { return !Less(b, a); }

template <class T>
T* FindByName(google::protobuf::RepeatedPtrField<T>* items, std::string_view name) {
  for (T& item : *items) {
    if (item.name() == name) return &item;
  }
  return nullptr;
}

template <class T>
void SortByName(google::protobuf::RepeatedPtrField<T>* items) {
  std::stable_sort(items->begin(), items->end(), [](const T& a, const T& b) { return a.name() < b.name(); });
}

void Bump(AuthState* state) { state->set_revision(state->revision() + 1); }

bool HasRootRole(const authpb::User& user) {
  return std::find(user.roles().begin(), user.roles().end(), kRootRole) != user.roles().end();
}

}  // namespace

// ----- the view ----------------------------------------------------------------------------------------

AuthView::AuthView(AuthState state) : state_(std::move(state)) {
  for (const authpb::User& user : state_.users()) {
    Permissions& p = users_[user.name()];
    p.root = HasRootRole(user);
    for (const std::string& role_name : user.roles()) {
      const authpb::Role* role = FindRole(role_name);
      if (role == nullptr) continue;  // etcd skips a role that does not exist (root, unless added)
      for (const authpb::Permission& perm : role->keypermission()) {
        Interval interval;
        interval.begin = perm.key();
        if (perm.range_end().empty()) {
          interval.end = perm.key() + std::string(1, '\0');  // the single key
        } else if (perm.range_end() != std::string_view("\0", 1)) {
          interval.end = perm.range_end();
        }  // "\0": to the end of the key space (an empty end)
        if (perm.permtype() == authpb::Permission::READ || perm.permtype() == authpb::Permission::READWRITE) {
          p.read.push_back(interval);
        }
        if (perm.permtype() == authpb::Permission::WRITE ||
            perm.permtype() == authpb::Permission::READWRITE) {
          p.write.push_back(interval);
        }
      }
    }
    auto by_begin = [](const Interval& a, const Interval& b) { return Less(a.begin, b.begin); };
    std::stable_sort(p.read.begin(), p.read.end(), by_begin);
    std::stable_sort(p.write.begin(), p.write.end(), by_begin);
  }
}

absl::StatusOr<std::shared_ptr<const AuthView>> AuthView::Decode(std::string_view bytes) {
  if (bytes.empty()) return Of(InitialAuthState());
  AuthState state;
  if (!state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("the auth state does not decode");
  }
  return Of(std::move(state));
}

std::shared_ptr<const AuthView> AuthView::Of(AuthState state) {
  return std::shared_ptr<const AuthView>(new AuthView(std::move(state)));
}

const authpb::User* AuthView::FindUser(std::string_view name) const {
  for (const authpb::User& u : state_.users()) {
    if (u.name() == name) return &u;
  }
  return nullptr;
}

const authpb::Role* AuthView::FindRole(std::string_view name) const {
  for (const authpb::Role& r : state_.roles()) {
    if (r.name() == name) return &r;
  }
  return nullptr;
}

bool AuthView::HasRole(std::string_view user, std::string_view role) const {
  const authpb::User* u = FindUser(user);
  return u != nullptr && std::find(u->roles().begin(), u->roles().end(), role) != u->roles().end();
}

bool AuthView::Covers(const std::vector<Interval>& intervals, std::string_view key,
                      std::string_view range_end) {
  if (key.empty()) return false;  // etcd: an empty key is +infinity, a range that starts nowhere
  if (range_end.empty()) {
    // etcd's checkKeyPoint: some permission holds the key.
    for (const Interval& i : intervals) {
      if (!i.begin.empty() && i.begin <= key && Less(key, i.end)) return true;
    }
    return false;
  }
  // etcd's checkKeyInterval: the permissions' union covers [key, end) without a gap ("\0": to +infinity).
  const std::string_view end = range_end == std::string_view("\0", 1) ? std::string_view() : range_end;
  std::string reached(key);  // covered up to here
  bool infinite = false;
  for (const Interval& i : intervals) {
    if (i.begin.empty()) break;         // sorted: only empty intervals follow
    if (Less(reached, i.begin)) break;  // a gap before this one
    if (i.end.empty()) {
      infinite = true;
      break;
    }
    if (Less(reached, i.end)) reached = i.end;
  }
  if (infinite) return true;
  return !end.empty() && LessOrEqual(end, reached);
}

absl::Status AuthView::CheckRange(const AuthInfo& who, std::string_view key, std::string_view range_end,
                                  bool write) const {
  if (!enabled()) return absl::OkStatus();
  if (who.user.empty()) return errors::UserEmpty();
  auto it = users_.find(who.user);
  if (it == users_.end()) return errors::PermissionDenied();
  if (it->second.root) return absl::OkStatus();
  if (Covers(write ? it->second.write : it->second.read, key, range_end)) return absl::OkStatus();
  return errors::PermissionDenied();
}

absl::Status AuthView::CheckAdmin(const AuthInfo& who) const {
  if (!enabled()) return absl::OkStatus();
  if (who.user.empty()) return errors::UserEmpty();
  auto it = users_.find(who.user);
  if (it == users_.end()) return errors::UserNotFound();
  if (!it->second.root) return errors::PermissionDenied();
  return absl::OkStatus();
}

absl::Status AuthView::CheckUser(const AuthInfo& who) const {
  if (!enabled()) return absl::OkStatus();
  if (who.user.empty()) return errors::UserEmpty();
  if (users_.find(who.user) == users_.end()) return errors::PermissionDenied();
  return absl::OkStatus();
}

// ----- changes -----------------------------------------------------------------------------------------

AuthState InitialAuthState() {
  AuthState state;
  state.set_revision(1);
  return state;
}

std::string EncodeAuthState(const AuthState& state) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  state.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

absl::Status ApplyAuthChange(const AuthChange& change, AuthState* state, bool* changed,
                             std::vector<std::string>* invalidated) {
  *changed = false;
  switch (change.request_case()) {
    case AuthChange::kEnable: {
      if (state->enabled()) return absl::OkStatus();  // etcd: "already enabled", ignored
      const authpb::User* root = FindByName(state->mutable_users(), kRootUser);
      if (root == nullptr) return errors::RootUserNotExist();
      if (!HasRootRole(*root)) return errors::RootRoleNotExist();
      state->set_enabled(true);  // etcd does not advance the revision for it
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kDisable: {
      if (!state->enabled()) return absl::OkStatus();
      state->set_enabled(false);
      Bump(state);
      invalidated->push_back("");  // etcd's tokenProvider.disable(): every token
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kUserAdd: {
      const auto& r = change.user_add();
      if (r.name().empty()) return errors::UserEmpty();
      if (FindByName(state->mutable_users(), r.name()) != nullptr) return errors::UserAlreadyExists();
      authpb::User* user = state->add_users();
      user->set_name(r.name());
      user->set_password(r.password());  // the hash (AuthChange's contract)
      user->mutable_options()->set_no_password(r.has_options() && r.options().no_password());
      SortByName(state->mutable_users());
      Bump(state);
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kUserDelete: {
      const auto& r = change.user_delete();
      if (state->enabled() && r.name() == kRootUser) return errors::InvalidAuthManagement();
      auto* users = state->mutable_users();
      auto it = std::find_if(users->begin(), users->end(),
                             [&](const authpb::User& u) { return u.name() == r.name(); });
      if (it == users->end()) return errors::UserNotFound();
      users->erase(it);
      Bump(state);
      invalidated->push_back(r.name());
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kUserChangePassword: {
      const auto& r = change.user_change_password();
      authpb::User* user = FindByName(state->mutable_users(), r.name());
      if (user == nullptr) return errors::UserNotFound();
      user->set_password(r.password());
      Bump(state);
      invalidated->push_back(r.name());
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kUserGrantRole: {
      const auto& r = change.user_grant_role();
      authpb::User* user = FindByName(state->mutable_users(), r.user());
      if (user == nullptr) return errors::UserNotFound();
      if (r.role() != kRootRole && FindByName(state->mutable_roles(), r.role()) == nullptr) {
        return errors::RoleNotFound();
      }
      if (std::find(user->roles().begin(), user->roles().end(), r.role()) != user->roles().end()) {
        return absl::OkStatus();  // etcd: already granted, ignored
      }
      user->add_roles(r.role());
      std::sort(user->mutable_roles()->begin(), user->mutable_roles()->end());
      Bump(state);
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kUserRevokeRole: {
      const auto& r = change.user_revoke_role();
      if (state->enabled() && r.name() == kRootUser && r.role() == kRootRole)
        return errors::InvalidAuthManagement();
      authpb::User* user = FindByName(state->mutable_users(), r.name());
      if (user == nullptr) return errors::UserNotFound();
      auto* roles = user->mutable_roles();
      const auto kept = std::remove(roles->begin(), roles->end(), r.role());
      if (kept == roles->end()) return errors::RoleNotGranted();
      roles->erase(kept, roles->end());
      Bump(state);
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kRoleAdd: {
      const auto& r = change.role_add();
      if (r.name().empty()) return errors::RoleEmpty();
      if (FindByName(state->mutable_roles(), r.name()) != nullptr) return errors::RoleAlreadyExists();
      state->add_roles()->set_name(r.name());
      SortByName(state->mutable_roles());
      Bump(state);
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kRoleDelete: {
      const auto& r = change.role_delete();
      if (state->enabled() && r.role() == kRootRole) return errors::InvalidAuthManagement();
      auto* roles = state->mutable_roles();
      auto it = std::find_if(roles->begin(), roles->end(),
                             [&](const authpb::Role& x) { return x.name() == r.role(); });
      if (it == roles->end()) return errors::RoleNotFound();
      roles->erase(it);
      for (authpb::User& user : *state->mutable_users()) {  // etcd takes the role from every user
        auto* granted = user.mutable_roles();
        granted->erase(std::remove(granted->begin(), granted->end(), r.role()), granted->end());
      }
      Bump(state);
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kRoleGrantPermission: {
      const auto& r = change.role_grant_permission();
      authpb::Role* role = FindByName(state->mutable_roles(), r.name());
      if (role == nullptr) return errors::RoleNotFound();
      auto* perms = role->mutable_keypermission();
      // etcd: the first permission whose key is not before the new one's; the same key and range_end
      // is updated in place, anything else added and the list sorted by key.
      auto at = std::find_if(perms->begin(), perms->end(),
                             [&](const authpb::Permission& p) { return p.key() >= r.perm().key(); });
      if (at != perms->end() && at->key() == r.perm().key() && at->range_end() == r.perm().range_end()) {
        at->set_permtype(r.perm().permtype());
      } else {
        *role->add_keypermission() = r.perm();
        std::stable_sort(
            perms->begin(), perms->end(),
            [](const authpb::Permission& a, const authpb::Permission& b) { return a.key() < b.key(); });
      }
      Bump(state);
      *changed = true;
      return absl::OkStatus();
    }
    case AuthChange::kRoleRevokePermission: {
      const auto& r = change.role_revoke_permission();
      authpb::Role* role = FindByName(state->mutable_roles(), r.role());
      if (role == nullptr) return errors::RoleNotFound();
      auto* perms = role->mutable_keypermission();
      const auto kept = std::remove_if(perms->begin(), perms->end(), [&](const authpb::Permission& p) {
        return p.key() == r.key() && p.range_end() == r.range_end();
      });
      if (kept == perms->end()) return errors::PermissionNotGranted();
      perms->erase(kept, perms->end());
      Bump(state);
      *changed = true;
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError("revkv: an auth change without a request");
  }
}

}  // namespace revkv::server::store
