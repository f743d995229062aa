// bcrypt through crypt(3) (password.h).
#include "server/auth/password.h"

#include <crypt.h>

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace revkv::server::auth {

namespace {

constexpr size_t kMaxPasswordBytes = 72;  // bcrypt reads no more

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace

absl::StatusOr<std::string> HashPassword(std::string_view password, int cost) {
  if (password.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError("revkv: a password cannot hold a NUL byte");
  }
  if (password.size() > kMaxPasswordBytes) {
    return absl::InvalidArgumentError(absl::StrCat("revkv: a password is at most ", kMaxPasswordBytes,
                                                   " bytes long (bcrypt ignores the rest)"));
  }
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  // Null random bytes: libxcrypt takes the salt from the operating system's random source.
  if (crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, setting, sizeof setting) ==
      nullptr) {
    return absl::InternalError(
        absl::StrCat("crypt_gensalt_rn($2b$, ", cost, ") failed: ", std::strerror(errno)));
  }
  auto data = std::make_unique<crypt_data>();  // 32 KiB: not on the stack
  std::memset(data.get(), 0, sizeof(crypt_data));
  const std::string phrase(password);
  const char* hashed = crypt_r(phrase.c_str(), setting, data.get());
  if (hashed == nullptr || hashed[0] == '*') {
    return absl::InternalError("crypt_r could not make a bcrypt hash (is the system's crypt libxcrypt?)");
  }
  return std::string(hashed);
}

bool CheckPassword(std::string_view password, std::string_view hash) {
  if (password.find('\0') != std::string_view::npos || hash.find('\0') != std::string_view::npos)
    return false;
  if (hash.size() < 4 || hash[0] != '$' || hash[1] != '2') return false;
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const std::string phrase(password);
  const std::string setting(hash);
  const char* hashed = crypt_r(phrase.c_str(), setting.c_str(), data.get());
  if (hashed == nullptr || hashed[0] == '*') return false;
  return ConstantTimeEqual(hashed, hash);
}

}  // namespace revkv::server::auth
