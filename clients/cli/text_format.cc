// Formatting of sizes, durations, rates, bars and sparklines.
#include "clients/cli/text_format.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace revkv::client {
namespace {

// `value` with three significant figures (or as an integer when it has three or more digits).
std::string ThreeFigures(double value) {
  if (value >= 100) return absl::StrFormat("%.0f", value);
  if (value >= 10) return absl::StrFormat("%.1f", value);
  return absl::StrFormat("%.2f", value);
}

// The eighths of a block, from one eighth (▏) to a full block (█).
constexpr std::array<const char*, 8> kEighths = {"▏", "▎", "▍", "▌", "▋", "▊", "▉", "█"};
// Sparkline levels, lowest first.
constexpr std::array<const char*, 8> kLevels = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, "B");
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  // Round first so that 1023.9 KiB reads "1.00MiB" rather than "1024KiB".
  while (unit + 1 < kUnits.size() && value >= 999.5) {
    value /= 1024;
    ++unit;
  }
  return absl::StrCat(ThreeFigures(value), kUnits[unit]);
}

std::string FormatNanos(uint64_t nanos) {
  if (nanos == 0) return "0";
  if (nanos < 1000) return absl::StrCat(nanos, "ns");
  const double value = static_cast<double>(nanos);
  if (value < 999.5e3) return absl::StrCat(ThreeFigures(value / 1e3), "us");
  if (value < 999.5e6) return absl::StrCat(ThreeFigures(value / 1e6), "ms");
  return absl::StrCat(ThreeFigures(value / 1e9), "s");
}

std::string FormatRate(double per_second) {
  if (!(per_second > 0)) return "0";  // also NaN
  if (per_second < 10) return absl::StrFormat("%.2f", per_second);
  if (per_second < 100) return absl::StrFormat("%.1f", per_second);
  if (per_second < 9999.5) return absl::StrFormat("%.0f", per_second);
  if (per_second < 999.5e3) return absl::StrCat(ThreeFigures(per_second / 1e3), "k");
  return absl::StrCat(ThreeFigures(per_second / 1e6), "M");
}

std::string Bar(double fraction, int width) {
  if (width <= 0) return "";
  if (!(fraction > 0)) fraction = 0;  // also NaN
  fraction = std::min(fraction, 1.0);
  const int eighths = static_cast<int>(std::lround(fraction * width * 8));
  std::string bar;
  const int full = eighths / 8;
  for (int i = 0; i < full; ++i) bar += kEighths[7];
  int cells = full;
  if (eighths % 8 != 0) {
    bar += kEighths[eighths % 8 - 1];
    ++cells;
  }
  bar.append(static_cast<size_t>(width - cells), ' ');
  return bar;
}

std::string Sparkline(const std::vector<uint64_t>& values) {
  const uint64_t max = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  std::string line;
  for (uint64_t value : values) {
    size_t level = 0;
    if (max > 0) {
      level = static_cast<size_t>(std::lround(static_cast<double>(value) / static_cast<double>(max) *
                                              static_cast<double>(kLevels.size() - 1)));
    }
    line += kLevels[std::min(level, kLevels.size() - 1)];
  }
  return line;
}

size_t DisplayWidth(const std::string& text) {
  // Count every byte that does not continue a UTF-8 sequence (continuations are 10xxxxxx).
  return static_cast<size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace revkv::client
