// The request target: path and query (http_target.h).
#include "server/ops/http_target.h"

#include <cctype>
#include <vector>

namespace revkv::server::http {
namespace {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(separator, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

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

}  // namespace revkv::server::http
