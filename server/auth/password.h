// Passwords as bcrypt hashes, through the system's crypt(3) (Debian's libcrypt1, libxcrypt: "$2b$" hashes;
// it verifies etcd's "$2a$" ones too), as etcd stores them (golang.org/x/crypto/bcrypt).
//
// Thread-safety: thread-safe (crypt_r and crypt_gensalt_rn with per-call buffers). Both functions take
// time on purpose (2^cost rounds: about 50 ms at cost 10): call them outside any transaction, on a thread
// that may block.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace revkv::server::auth {

inline constexpr int kDefaultBcryptCost = 10;  // etcd's --bcrypt-cost default (bcrypt.DefaultCost)
inline constexpr int kMinBcryptCost = 4;
inline constexpr int kMaxBcryptCost = 31;

// The bcrypt hash of `password` with a fresh random salt. InvalidArgument for a password holding a NUL
// byte (crypt(3) would stop there, so two passwords would hash alike) or longer than bcrypt's 72 bytes
// (it would ignore the rest); Internal if the system's crypt cannot make a bcrypt hash.
absl::StatusOr<std::string> HashPassword(std::string_view password, int cost = kDefaultBcryptCost);

// True if `password` matches `hash` (a bcrypt hash); false otherwise, also for a malformed hash or a
// password holding a NUL byte. Compares in constant time.
bool CheckPassword(std::string_view password, std::string_view hash);

}  // namespace revkv::server::auth
