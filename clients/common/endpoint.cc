// Parsing of etcdctl-style endpoints.
#include "clients/common/endpoint.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace revkv::client {
namespace {

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("endpoint \"", text, "\": ", why));
}

}  // namespace

absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view text) {
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  Endpoint endpoint;
  if (absl::ConsumePrefix(&rest, "unix://") || absl::ConsumePrefix(&rest, "unix:")) {
    if (rest.empty()) return Invalid(text, "empty socket path");
    endpoint.target = absl::StrCat("unix:", rest);
    return endpoint;
  }
  if (absl::ConsumePrefix(&rest, "https://")) {
    endpoint.https = true;
  } else if (!absl::ConsumePrefix(&rest, "http://") && absl::StrContains(rest, "://")) {
    return Invalid(text, "unknown scheme (use http://, https:// or unix://)");
  }
  absl::ConsumeSuffix(&rest, "/");
  if (absl::StrContains(rest, '/')) return Invalid(text, "a path is not allowed");

  absl::string_view host;
  absl::string_view port;
  if (absl::ConsumePrefix(&rest, "[")) {  // [v6 address]:port
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos) return Invalid(text, "missing ']'");
    host = rest.substr(0, close);
    rest.remove_prefix(close + 1);
    if (!absl::ConsumePrefix(&rest, ":")) return Invalid(text, "missing :port");
    port = rest;
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos) return Invalid(text, "missing :port");
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (absl::StrContains(host, ':')) return Invalid(text, "write an IPv6 address in brackets");
  }
  if (host.empty()) return Invalid(text, "empty host");
  int port_number = 0;
  if (!absl::SimpleAtoi(port, &port_number) || port_number < 1 || port_number > 65535) {
    return Invalid(text, "port must be a number from 1 to 65535");
  }
  endpoint.target = absl::StrContains(host, ':') ? absl::StrCat("[", host, "]:", port_number)
                                                 : absl::StrCat(host, ":", port_number);
  return endpoint;
}

absl::StatusOr<std::vector<Endpoint>> ParseEndpoints(absl::string_view list) {
  std::vector<Endpoint> endpoints;
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    if (absl::StripAsciiWhitespace(item).empty()) continue;
    absl::StatusOr<Endpoint> endpoint = ParseEndpoint(item);
    if (!endpoint.ok()) return endpoint.status();
    endpoints.push_back(*std::move(endpoint));
  }
  if (endpoints.empty()) return absl::InvalidArgumentError("no endpoint given");
  return endpoints;
}

}  // namespace revkv::client
