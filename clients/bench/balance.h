// How the transfer workload stores an account balance in a value.
//
// A balance is written in decimal (with a '-' when negative) and padded with spaces to the value size,
// so that transfer values are as large as every other workload's. An absent key reads as balance 0.
#ifndef REVKV_CLIENTS_BENCH_BALANCE_H_
#define REVKV_CLIENTS_BENCH_BALANCE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace revkv::client {

// Writes `balance` padded to `value_size` bytes into `*out` (longer when the digits need more), reusing
// its storage.
void EncodeBalance(int64_t balance, int value_size, std::string* out);

// The balance a value holds: its leading decimal number; 0 for an empty value or one without digits.
int64_t DecodeBalance(std::string_view value);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_BALANCE_H_
