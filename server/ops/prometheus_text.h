// Prometheus text exposition format 0.0.4: the lexical pieces (internal to server/ops).
//
// Names, escaping and number formatting, shared by MetricWriter and the tests. Nothing here knows
// about registries or families. All functions are pure and thread-safe.
//
// The rules, from the format's specification:
//  - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*; label names
//    starting with "__" are reserved for Prometheus itself;
//  - in label values, backslash, double quote and line feed are written \\, \" and \n;
//  - in HELP text, backslash and line feed are written \\ and \n (quotes stay as they are);
//  - sample values are Go floats: "NaN", "+Inf", "-Inf" or a decimal/scientific number.
// Text must be UTF-8: invalid byte sequences are replaced by U+FFFD so a scrape never fails on a label
// value that came from outside.
#pragma once

#include <string>
#include <string_view>

namespace revkv::server::prometheus {

// True if `name` is a valid metric name.
bool IsValidMetricName(std::string_view name);

// True if `name` is a valid label name that a client may use (not reserved with a "__" prefix).
bool IsValidLabelName(std::string_view name);

// Appends `value` escaped for use between the double quotes of a label value.
void AppendLabelValue(std::string* out, std::string_view value);

// Appends `text` escaped for a "# HELP" line.
void AppendHelp(std::string* out, std::string_view text);

// Appends a sample value: integers below 2^53 in plain decimal, other finite values in the shortest
// form that reads back exactly, and NaN, +Inf, -Inf by name.
void AppendValue(std::string* out, double value);

// Prints an aborting message for a programmer error in metric use ("revkv metrics: <message>").
[[noreturn]] void Fatal(std::string_view message);

}  // namespace revkv::server::prometheus
