// Prometheus text exposition format 0.0.4: names, escaping, numbers (see prometheus_text.h).
#include "server/ops/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "runtime/port/diagnostics.h"

namespace revkv::server::prometheus {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 if it is not one (overlong
// forms, surrogates and code points above U+10FFFF are rejected, as Go's utf8.ValidString does).
size_t Utf8SequenceLength(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < len) return 0;
  const auto b1 = static_cast<unsigned char>(s[1]);
  if (b1 < lo || b1 > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80 || b > 0xBF) return 0;
  }
  return len;
}

// Appends `text` with the escapes of the format; `escape_quote` distinguishes label values from HELP.
void AppendEscaped(std::string* out, std::string_view text, bool escape_quote) {
  out->reserve(out->size() + text.size());
  while (!text.empty()) {
    const char c = text[0];
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' && escape_quote) {
      out->append("\\\"");
    } else {
      const size_t len = Utf8SequenceLength(text);
      if (len == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER for one bad byte
        text.remove_prefix(1);
        continue;
      }
      out->append(text.substr(0, len));
      text.remove_prefix(len);
      continue;
    }
    text.remove_prefix(1);
  }
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

void AppendLabelValue(std::string* out, std::string_view value) { AppendEscaped(out, value, true); }

void AppendHelp(std::string* out, std::string_view text) { AppendEscaped(out, text, false); }

void AppendValue(std::string* out, double value) {
  if (std::isnan(value)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(value)) {
    out->append(value > 0 ? "+Inf" : "-Inf");
    return;
  }
  char buf[64];
  constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53
  // Integers in plain decimal; anything else in the shortest form that reads back exactly.
  const std::to_chars_result result = value == std::trunc(value) && std::fabs(value) < kExactIntegerLimit
                                          ? std::to_chars(buf, buf + sizeof(buf), static_cast<int64_t>(value))
                                          : std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, result.ptr);
}

void Fatal(std::string_view message) {
  runtime::port::Fatal("revkv metrics: %.*s", static_cast<int>(message.size()), message.data());
}

}  // namespace revkv::server::prometheus
