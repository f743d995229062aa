// HttpRequest and HttpResponse helpers and response serialization (see http_message.h).
#include "server/ops/http_message.h"

#include <ctime>

#include "fmt/format.h"

namespace revkv::server {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    const char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoreCase(key, name)) return value;
  }
  return {};
}

std::string_view HttpRequest::Query(std::string_view name, std::string_view fallback) const {
  auto it = query.find(name);
  return it == query.end() ? fallback : std::string_view(it->second);
}

HttpResponse HttpResponse::Make(int status, std::string_view content_type, std::string body) {
  HttpResponse response;
  response.status = status;
  response.content_type = std::string(content_type);
  response.body = std::move(body);
  return response;
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  return Make(status, "text/plain; charset=utf-8", std::move(body));
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  return Make(status, "application/json", std::move(body));
}

namespace http {
namespace {

// Header names and values must not carry CR or LF (response splitting); they become spaces.
void AppendSanitized(std::string* out, std::string_view text) {
  for (char c : text) out->push_back(c == '\r' || c == '\n' ? ' ' : c);
}

void AppendDate(std::string* out) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  out->append(buf, n);
}

// 1xx, 204 and 304 responses never have a body (RFC 9110 section 6.4.1).
bool StatusHasBody(int status) { return status >= 200 && status != 204 && status != 304; }

}  // namespace

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

std::string SerializeResponse(const HttpResponse& response, const SerializeOptions& options) {
  const int status = response.status >= 100 && response.status <= 999 ? response.status : 500;
  const bool has_body = StatusHasBody(status);
  std::string out;
  out.reserve(256 + (options.head_only || !has_body ? 0 : response.body.size()));
  out.append(fmt::format("HTTP/1.1 {} {}\r\n", status, ReasonPhrase(status)));
  for (const auto& [name, value] : response.headers) {
    // The server owns framing headers; a handler's copy would contradict them.
    if (EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "connection") ||
        EqualsIgnoreCase(name, "transfer-encoding") || EqualsIgnoreCase(name, "date")) {
      continue;
    }
    AppendSanitized(&out, name);
    out.append(": ");
    AppendSanitized(&out, value);
    out.append("\r\n");
  }
  if (has_body) {
    out.append("Content-Type: ");
    AppendSanitized(&out, response.content_type);
    out.append(fmt::format("\r\nContent-Length: {}\r\n", response.body.size()));
  }
  out.append("Date: ");
  AppendDate(&out);
  out.append("\r\n");
  if (options.close) {
    out.append("Connection: close\r\n");
  } else if (options.keep_alive_10) {
    out.append("Connection: keep-alive\r\n");
  }
  out.append("\r\n");
  if (has_body && !options.head_only) out.append(response.body);
  return out;
}

HttpResponse ErrorResponse(int status, std::string_view detail) {
  std::string body = fmt::format("{} {}", status, ReasonPhrase(status));
  if (!detail.empty()) body.append(": ").append(detail);
  body.push_back('\n');
  return HttpResponse::Text(status, std::move(body));
}

}  // namespace http
}  // namespace revkv::server
