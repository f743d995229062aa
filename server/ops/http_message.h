// Reason phrases and error responses of the ops endpoint (internal to server/ops). Boost.Beast writes
// the responses (http_server.cc). Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "server/ops/http_server.h"

namespace revkv::server::http {

// The reason phrase of `status` ("Not Found"), or "Unknown" for a code this server does not use.
std::string_view ReasonPhrase(int status);

// A plain-text error response whose body is "<code> <reason>: <detail>\n" (or without ": <detail>").
HttpResponse ErrorResponse(int status, std::string_view detail = "");

}  // namespace revkv::server::http
