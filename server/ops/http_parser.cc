// HTTP/1.x request-head parser (see http_parser.h).
#include "server/ops/http_parser.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "fmt/format.h"

namespace revkv::server::http {
namespace {

using Status = ParsedRequest::Status;

bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(unsigned char c) { return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Splits at every `separator`; empty pieces are kept.
std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> pieces;
  while (true) {
    const size_t at = s.find(separator);
    pieces.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return pieces;
    s.remove_prefix(at + 1);
  }
}

// tchar from RFC 9110: the characters of a method or a header name.
bool IsTokenChar(unsigned char c) {
  if (IsAlnum(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Bytes allowed in the request line (visible ASCII and spaces) and in header lines (also HT and
// obs-text). CR and LF are handled by the line splitter.
bool AllowedInRequestLine(unsigned char c) { return c >= 0x20 && c < 0x7F; }
bool AllowedInHeaderLine(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7F); }

ParsedRequest Error(int status, std::string message) {
  ParsedRequest result;
  result.status = Status::kError;
  result.error_status = status;
  result.error_message = std::move(message);
  return result;
}

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Checks the bytes of an unfinished line so garbage fails before the line is complete. A CR is
// allowed as the last byte received (it may start a CRLF).
bool PartialLineIsPlausible(std::string_view line, bool request_line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  for (unsigned char c : line) {
    if (request_line ? !AllowedInRequestLine(c) : !AllowedInHeaderLine(c)) return false;
  }
  if (!request_line) return true;
  // A request line starts with a method token followed by a space.
  const std::string_view method = line.substr(0, line.find(' '));
  if (method.empty() && !line.empty()) return false;
  for (unsigned char c : method) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits the target into path and query and decodes both. Accepts origin-form ("/p?q") and
// absolute-form ("http://host/p?q"); anything else is not for this server.
std::optional<std::string> ParseTarget(std::string_view target, HttpRequest* request) {
  std::string_view rest = target;
  if (const size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  if (!rest.empty() && rest.front() != '/') {
    const size_t scheme_end = rest.find("://");
    const std::string scheme = ToLower(rest.substr(0, scheme_end));
    if (scheme_end == std::string_view::npos || (scheme != "http" && scheme != "https")) {
      return "request target must be a path starting with '/'";
    }
    rest = rest.substr(scheme_end + 3);
    const size_t slash = rest.find_first_of("/?");
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  const size_t question = rest.find('?');
  if (!PercentDecode(rest.substr(0, question), false, &request->path)) {
    return "bad percent-encoding in the request path";
  }
  if (request->path.empty()) request->path.push_back('/');  // "http://host" or "http://host?q"
  if (question == std::string_view::npos) return std::nullopt;
  for (std::string_view pair : Split(rest.substr(question + 1), '&')) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string name, value;
    if (!PercentDecode(pair.substr(0, eq), true, &name) ||
        (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), true, &value))) {
      return "bad percent-encoding in the query string";
    }
    request->query[std::move(name)] = std::move(value);
  }
  return std::nullopt;
}

}  // namespace

bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = HexValue(in[i + 1]);
      const int lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      const char decoded = static_cast<char>(hi * 16 + lo);
      if (decoded == '\0') return false;
      out->push_back(decoded);
      i += 2;
    } else {
      out->push_back(c);
    }
  }
  return true;
}

ParsedRequest ParseRequestHead(std::string_view buffer, const ParseLimits& limits) {
  // Leading empty lines before a request line are ignored (RFC 9112 section 2.2).
  size_t start = 0;
  while (start < buffer.size() && (buffer[start] == '\r' || buffer[start] == '\n')) {
    if (buffer[start] == '\r' && start + 1 < buffer.size() && buffer[start + 1] != '\n') {
      return Error(400, "bare CR before the request line");
    }
    ++start;
    if (start > limits.max_header_bytes) return Error(431, "request head too large");
  }

  // Split lines (LF, optionally preceded by CR) up to the blank line that ends the head.
  std::vector<std::string_view> lines;
  size_t pos = start;
  size_t head_end = 0;
  while (true) {
    const size_t newline = buffer.find('\n', pos);
    if (newline == std::string_view::npos) {
      if (buffer.size() > limits.max_header_bytes) return Error(431, "request head too large");
      if (!PartialLineIsPlausible(buffer.substr(pos), lines.empty())) {
        return Error(400, lines.empty() ? "malformed request line" : "malformed header line");
      }
      return ParsedRequest{};
    }
    if (newline + 1 > limits.max_header_bytes) return Error(431, "request head too large");
    std::string_view line = buffer.substr(pos, newline - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = newline + 1;
    if (line.empty()) {
      if (lines.empty()) return Error(400, "missing request line");
      head_end = pos;
      break;
    }
    for (unsigned char c : line) {
      if (lines.empty() ? !AllowedInRequestLine(c) : !AllowedInHeaderLine(c)) {
        return Error(400, lines.empty() ? "malformed request line" : "control character in a header");
      }
    }
    if (lines.size() > static_cast<size_t>(limits.max_headers)) {
      return Error(431, fmt::format("more than {} header fields", limits.max_headers));
    }
    lines.push_back(line);
  }

  ParsedRequest result;
  HttpRequest& request = result.request;

  // Request line: method SP target SP HTTP-version.
  const std::vector<std::string_view> parts = Split(lines[0], ' ');
  if (parts.size() != 3 || !IsToken(parts[0]) || parts[1].empty()) {
    return Error(400, "malformed request line");
  }
  const std::string_view version = parts[2];
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !IsDigit(version[5]) || version[6] != '.' ||
      !IsDigit(version[7])) {
    return Error(400, "malformed HTTP version");
  }
  if (version[5] != '1') return Error(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  request.method = std::string(parts[0]);
  request.target = std::string(parts[1]);
  request.version_minor = version[7] - '0';
  if (std::optional<std::string> error = ParseTarget(parts[1], &request)) return Error(400, *error);

  // Header fields.
  int hosts = 0;
  std::optional<uint64_t> content_length;
  bool close = false, keep_alive_token = false, transfer_encoding = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.front() == ' ' || line.front() == '\t') return Error(400, "obsolete header line folding");
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Error(400, "malformed header line");
    }
    std::string name = ToLower(line.substr(0, colon));
    const std::string_view value = TrimBlanks(line.substr(colon + 1));
    if (name == "host") {
      ++hosts;
    } else if (name == "content-length") {
      uint64_t length = 0;
      bool valid = !value.empty() && value.size() <= 18;  // no overflow below 10^18
      for (unsigned char c : value) {
        valid = valid && IsDigit(c);
        length = length * 10 + (c - '0');
      }
      if (!valid || (content_length && *content_length != length)) {
        return Error(400, "invalid Content-Length");
      }
      content_length = length;
    } else if (name == "transfer-encoding") {
      transfer_encoding = true;
    } else if (name == "connection") {
      for (std::string_view token : Split(value, ',')) {
        const std::string lower = ToLower(TrimBlanks(token));
        if (lower == "close") close = true;
        if (lower == "keep-alive") keep_alive_token = true;
      }
    }
    request.headers.emplace_back(std::move(name), std::string(value));
  }
  if (request.version_minor >= 1 && hosts != 1) {
    return Error(400, hosts == 0 ? "missing Host header" : "more than one Host header");
  }

  result.status = Status::kComplete;
  result.head_bytes = head_end;
  result.has_body = transfer_encoding || (content_length && *content_length > 0);
  result.keep_alive = !close && !result.has_body && (request.version_minor >= 1 || keep_alive_token);
  return result;
}

}  // namespace revkv::server::http
