// Sizes and durations as operators write them (internal to server/config).
//
// Sizes: a non-negative number, optionally with a fraction, then an optional unit, case-insensitive:
// B; binary KiB, MiB, GiB, TiB (powers of 1024); decimal KB, MB, GB, TB (powers of 1000). A blank may
// separate number and unit. The result must be a whole number of bytes: "1.5MiB" is 1572864, "0.1KiB"
// is an error. Durations: Go/absl syntax, a sequence of numbers with units ns, us, ms, s, m, h
// ("100ms", "1m30s", "1.5s"); "0" is zero; negative durations are errors. Thread-safe (pure).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace revkv::server::config {

// Parses a size in bytes. InvalidArgument with a message that quotes `text` and lists the units.
absl::StatusOr<uint64_t> ParseSize(std::string_view text);

// Formats bytes in the largest binary unit that shows them exactly with at most three decimals:
// 67108864 -> "64MiB", 1572864 -> "1.5MiB", 1000 -> "1000B"... ParseSize reads it back exactly.
std::string FormatSize(uint64_t bytes);

// Parses a non-negative, finite duration. InvalidArgument quoting `text` and listing the units.
absl::StatusOr<absl::Duration> ParseDurationValue(std::string_view text);

// "10ms", "1m30s", "0".
std::string FormatDurationValue(absl::Duration duration);

// Parses a non-negative decimal integer (digits only). InvalidArgument quoting `text`.
absl::StatusOr<uint64_t> ParseCount(std::string_view text);

}  // namespace revkv::server::config
