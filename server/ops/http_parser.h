// HTTP/1.x request-head parser of the ops endpoint (internal to server/ops).
//
// A pure function over the bytes received so far: it reports that more bytes are needed, that the head
// is malformed (with the status to answer), or a complete request and how many bytes it used. The
// connection calls it again after each read; heads are at most a few KiB, so re-scanning is cheap and
// the parser keeps no state. It is strict where leniency has bitten servers (RFC 9112): no space
// before a header colon, no obsolete line folding, no control bytes, one Host for HTTP/1.1, agreeing
// Content-Length values. Bytes that cannot start a request line are rejected as soon as they arrive, so
// garbage (or a TLS handshake) is answered at once rather than at the size limit or a timeout.
// Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/ops/http_server.h"

namespace revkv::server::http {

struct ParseLimits {
  size_t max_header_bytes = size_t{16} * 1024;  // request line + header lines + the blank line
  int max_headers = 64;
};

struct ParsedRequest {
  enum class Status { kIncomplete, kComplete, kError };
  Status status = Status::kIncomplete;
  size_t head_bytes = 0;      // kComplete: bytes of the head, leading blank lines included
  int error_status = 0;       // kError: the status to answer (400, 431 or 505)
  std::string error_message;  // kError: why, for the response body
  HttpRequest request;        // kComplete
  bool keep_alive = false;    // kComplete: the client allows another request on the connection
  bool has_body = false;      // kComplete: Content-Length > 0 or a Transfer-Encoding
};

// Parses the request head at the start of `buffer` (bytes after it are left alone).
ParsedRequest ParseRequestHead(std::string_view buffer, const ParseLimits& limits);

// Percent-decodes `in` into `*out` (and '+' into a space when `plus_is_space`). Returns false on a bad
// escape or a decoded NUL byte.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out);

}  // namespace revkv::server::http
