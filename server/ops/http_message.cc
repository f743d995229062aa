// HttpRequest and HttpResponse helpers, reason phrases and error responses (see http_message.h).
#include "server/ops/http_message.h"

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

HttpResponse ErrorResponse(int status, std::string_view detail) {
  std::string body = fmt::format("{} {}", status, ReasonPhrase(status));
  if (!detail.empty()) body.append(": ").append(detail);
  body.push_back('\n');
  return HttpResponse::Text(status, std::move(body));
}

}  // namespace http
}  // namespace revkv::server
