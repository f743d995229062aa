// Sizes, durations and counts as operators write them (see units.h).
#include "server/config/units.h"

#include <cctype>

#include "fmt/format.h"

namespace revkv::server::config {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;

struct Unit {
  std::string_view name;  // lower case
  uint64_t bytes;
};
constexpr Unit kUnits[] = {
    {"", 1},
    {"b", 1},
    {"kib", kKiB},
    {"mib", kKiB << 10},
    {"gib", kKiB << 20},
    {"tib", kKiB << 30},
    {"kb", 1000},
    {"mb", 1000000},
    {"gb", 1000000000},
    {"tb", 1000000000000},
};

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

absl::Status SizeError(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(fmt::format(
      "invalid size '{}': {} (use bytes or a number with a unit: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB; "
      "e.g. 64MiB, 2GiB, 1572864)",
      text, why));
}

}  // namespace

absl::StatusOr<uint64_t> ParseSize(std::string_view text) {
  std::string_view s = Trim(text);
  if (s.empty()) return SizeError(text, "empty");
  if (s.front() == '-') return SizeError(text, "must not be negative");
  // Mantissa: digits with an optional fraction, as an integer and a power of ten.
  unsigned __int128 mantissa = 0;
  uint64_t divisor = 1;
  size_t i = 0;
  bool digits = false, fraction = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
      if (fraction) divisor *= 10;
      if (mantissa > (static_cast<unsigned __int128>(1) << 80) || divisor > 1000000000000000000ull) {
        return SizeError(text, "too large or too precise");
      }
    } else if (c == '.' && !fraction) {
      fraction = true;
    } else {
      break;
    }
  }
  if (!digits) return SizeError(text, "no number");
  const std::string unit_name = ToLower(Trim(s.substr(i)));
  const Unit* unit = nullptr;
  for (const Unit& u : kUnits) {
    if (u.name == unit_name) unit = &u;
  }
  if (unit == nullptr) return SizeError(text, fmt::format("unknown unit '{}'", s.substr(i)));
  const unsigned __int128 scaled = mantissa * unit->bytes;
  if (scaled % divisor != 0) return SizeError(text, "not a whole number of bytes");
  const unsigned __int128 bytes = scaled / divisor;
  if (bytes > UINT64_MAX) return SizeError(text, "too large");
  return static_cast<uint64_t>(bytes);
}

std::string FormatSize(uint64_t bytes) {
  static constexpr Unit kBinary[] = {
      {"TiB", kKiB << 30}, {"GiB", kKiB << 20}, {"MiB", kKiB << 10}, {"KiB", kKiB}};
  for (const Unit& unit : kBinary) {
    if (bytes < unit.bytes) continue;
    // Exact with at most three decimals?
    const unsigned __int128 thousandths = static_cast<unsigned __int128>(bytes) * 1000;
    if (thousandths % unit.bytes != 0) continue;
    const uint64_t value = static_cast<uint64_t>(thousandths / unit.bytes);
    std::string number = fmt::format("{}.{:03}", value / 1000, value % 1000);
    while (number.back() == '0') number.pop_back();
    if (number.back() == '.') number.pop_back();
    return number + std::string(unit.name);
  }
  return fmt::format("{}B", bytes);
}

absl::StatusOr<absl::Duration> ParseDurationValue(std::string_view text) {
  const std::string s(Trim(text));
  absl::Duration duration;
  const auto error = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        fmt::format("invalid duration '{}': {} (use a number with a unit: ns, us, ms, s, m, h; e.g. 100ms, "
                    "5s, 1m, 1m30s)",
                    text, why));
  };
  if (s.empty()) return error("empty");
  if (s.front() == '-') return error("must not be negative");
  if (!absl::ParseDuration(s, &duration)) {
    const bool unitless = s.find_first_not_of("0123456789.") == std::string::npos;
    return error(unitless ? "a unit is required" : "not understood");
  }
  if (duration == absl::InfiniteDuration()) return error("must be finite");
  return duration;
}

std::string FormatDurationValue(absl::Duration duration) { return absl::FormatDuration(duration); }

absl::StatusOr<uint64_t> ParseCount(std::string_view text) {
  const std::string_view s = Trim(text);
  if (!s.empty() && s.front() == '-') {
    return absl::InvalidArgumentError(fmt::format("invalid value '{}': must not be negative", text));
  }
  uint64_t value = 0;
  bool ok = !s.empty();
  for (char c : s) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (c < '0' || c > '9' || value > (UINT64_MAX - digit) / 10) {
      ok = false;
      break;
    }
    value = value * 10 + digit;
  }
  if (!ok) {
    return absl::InvalidArgumentError(fmt::format("invalid value '{}': expected a whole number", text));
  }
  return value;
}

}  // namespace revkv::server::config
