// HTTP/1.1 response serialization of the ops endpoint (internal to server/ops).
//
// Turns an HttpResponse into the bytes on the wire: status line, the handler's headers (with CR and LF
// replaced, so a handler cannot split a response), Content-Type, Content-Length, Date, Connection,
// and the body unless the request was HEAD. Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "server/ops/http_server.h"

namespace revkv::server::http {

// The reason phrase of `status` ("Not Found"), or "Unknown" for a code this server does not use.
std::string_view ReasonPhrase(int status);

struct SerializeOptions {
  bool head_only = false;      // HEAD: headers only, Content-Length as for GET
  bool close = false;          // send "Connection: close"
  bool keep_alive_10 = false;  // HTTP/1.0 client asked for keep-alive: send "Connection: keep-alive"
};

// The full response text.
std::string SerializeResponse(const HttpResponse& response, const SerializeOptions& options);

// A plain-text error response whose body is "<code> <reason>: <detail>\n" (or without ": <detail>").
HttpResponse ErrorResponse(int status, std::string_view detail = "");

}  // namespace revkv::server::http
