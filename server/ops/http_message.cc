// HttpRequest and HttpResponse helpers and response serialization (see http_message.h).
#include "server/ops/http_message.h"

#include <ctime>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace revkv::server {

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
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
  std::tm tm;
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
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string SerializeResponse(const HttpResponse& response, const SerializeOptions& options) {
  const int status = response.status >= 100 && response.status <= 999 ? response.status : 500;
  const bool has_body = StatusHasBody(status);
  std::string out;
  out.reserve(256 + (options.head_only || !has_body ? 0 : response.body.size()));
  absl::StrAppend(&out, "HTTP/1.1 ", status, " ", ReasonPhrase(status), "\r\n");
  for (const auto& [name, value] : response.headers) {
    // The server owns framing headers; a handler's copy would contradict them.
    if (absl::EqualsIgnoreCase(name, "content-length") || absl::EqualsIgnoreCase(name, "connection") ||
        absl::EqualsIgnoreCase(name, "transfer-encoding") || absl::EqualsIgnoreCase(name, "date")) {
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
    absl::StrAppend(&out, "\r\nContent-Length: ", response.body.size(), "\r\n");
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
  std::string body = absl::StrCat(status, " ", ReasonPhrase(status));
  if (!detail.empty()) absl::StrAppend(&body, ": ", detail);
  body.push_back('\n');
  return HttpResponse::Text(status, std::move(body));
}

}  // namespace http
}  // namespace revkv::server
