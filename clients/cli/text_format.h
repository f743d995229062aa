// Figures as revkv's text output writes them: sizes, durations, rates, and the two small pictures of
// the `gc watch` view (a bar and a sparkline). Pure functions; ASCII except Bar and Sparkline, which
// use Unicode block characters.
#ifndef REVKV_CLIENTS_CLI_TEXT_FORMAT_H_
#define REVKV_CLIENTS_CLI_TEXT_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace revkv::client {

// A byte count in binary units with three significant figures: "0B", "512B", "1.50KiB", "12.3MiB",
// "1.00GiB".
std::string FormatBytes(uint64_t bytes);

// A duration in nanoseconds in the largest fitting unit with three significant figures: "0", "850ns",
// "12.3us", "4.10ms", "1.20s".
std::string FormatNanos(uint64_t nanos);

// A per-second rate: "0", "0.50", "12.5", "1234", "12.3k", "4.56M".
std::string FormatRate(double per_second);

// `fraction` (clamped to [0, 1]) as a bar `width` cells wide, in eighths of a cell, padded with spaces:
// Bar(0.5, 4) == "██  ".
std::string Bar(double fraction, int width);

// One cell per value, ▁ to █, scaled so the largest value is █ (all ▁ when every value is 0).
std::string Sparkline(const std::vector<uint64_t>& values);

// The number of terminal columns `text` (UTF-8) takes, counting one per code point.
size_t DisplayWidth(const std::string& text);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_TEXT_FORMAT_H_
