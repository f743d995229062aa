// Endpoints as etcdctl's --endpoints spells them.
//
// An endpoint is `host:port`, optionally with an `http://` or `https://` scheme and a trailing slash
// (`http://127.0.0.1:2379/`), an IPv6 host in brackets (`[::1]:2379`), or a Unix socket
// (`unix:///run/revkv.sock` or `unix:relative.sock`). A list separates endpoints with commas.
#ifndef REVKV_CLIENTS_COMMON_ENDPOINT_H_
#define REVKV_CLIENTS_COMMON_ENDPOINT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace revkv::client {

struct Endpoint {
  std::string target;  // what gRPC dials: "host:port" or "unix:path"
  bool https = false;  // the endpoint was written with https://, which asks for TLS

  bool operator==(const Endpoint&) const = default;
};

// Parses one endpoint. INVALID_ARGUMENT names the text and what is wrong with it (no port, port out of
// range, unknown scheme, empty host).
absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view text);

// Parses a comma-separated list of at least one endpoint; blanks around commas are ignored.
absl::StatusOr<std::vector<Endpoint>> ParseEndpoints(absl::string_view list);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_COMMON_ENDPOINT_H_
