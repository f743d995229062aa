// Balance values of the transfer workload.
#include "clients/bench/balance.h"

#include <charconv>

namespace revkv::client {

void EncodeBalance(int64_t balance, int value_size, std::string* out) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), balance);
  const size_t length = static_cast<size_t>(end - digits);
  out->assign(digits, length);
  if (static_cast<int>(length) < value_size) out->resize(value_size, ' ');
}

int64_t DecodeBalance(std::string_view value) {
  int64_t balance = 0;
  std::from_chars(value.data(), value.data() + value.size(), balance);
  return balance;
}

}  // namespace revkv::client
