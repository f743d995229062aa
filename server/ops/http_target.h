// The request target of the ops endpoint (internal to server/ops): the path and query a handler sees.
//
// Boost.Beast parses the request head; what the target means is ours: origin-form ("/p?q") and
// absolute-form ("http://host/p?q") are accepted, anything else is not for this server; the path is
// percent-decoded ('+' stays '+'), the query's names and values are percent-decoded with '+' as a space,
// the last of a repeated name wins, and a fragment is ignored. Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/ops/http_server.h"

namespace revkv::server::http {

// Fills request->path and request->query from `target`. Returns why the target is refused (answered
// with 400), or nullopt when it is accepted.
std::optional<std::string> ParseTarget(std::string_view target, HttpRequest* request);

// Percent-decodes `in` into `*out` (and '+' into a space when `plus_is_space`). Returns false on a bad
// escape or a decoded NUL byte.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out);

}  // namespace revkv::server::http
