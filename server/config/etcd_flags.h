// etcd's names for revkv's settings, and the environment variables (internal to server/config).
//
// An operator coming from etcd may keep etcd's flags and environment: revkv accepts
//  - etcd's flags whose value means the same as a revkv setting but is written differently (URLs where
//    revkv takes host:port, auto-compaction's mode and retention where revkv has two history windows):
//    EtcdFlags(), each converting its value into the setting;
//  - etcd's flags that revkv spells the same (--name, --data-dir, --max-txn-ops, --cert-file, ...):
//    nothing to convert; IsEtcdName() tells which settings these are;
//  - environment variables: ETCD_<NAME> for each of both kinds (etcd's own convention, e.g.
//    ETCD_LISTEN_CLIENT_URLS, ETCD_DATA_DIR), and REVKV_<NAME> for every revkv setting, derived from the
//    table of settings: a setting added there has its REVKV_ variable at once (and its ETCD_ variable if
//    etcd has a flag of the same name).
// Precedence, later wins: defaults < TOML file < ETCD_* < REVKV_* < command-line flags. Within the
// command line, a revkv flag and an etcd flag that set the same setting may not both be given.
//
// Thread-safety: thread-safe (immutable tables, pure functions).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "server/config/config.h"

namespace revkv::server::config {

struct EtcdFlag {
  std::string flag;       // etcd's flag, without dashes: "listen-client-urls"
  std::string sets;       // the revkv settings it sets, for --help and messages: "listen"
  std::string type_name;  // placeholder in --help: "URL"
  std::string help;
};

// etcd's flags that revkv converts (their values are applied by ApplyEtcdValues).
const std::vector<EtcdFlag>& EtcdFlags();

// Whether etcd has a flag named `revkv_flag` with the same meaning (so ETCD_<NAME> sets it too).
bool IsEtcdName(std::string_view revkv_flag);

// "max-heap" with prefix "REVKV_" -> "REVKV_MAX_HEAP".
std::string EnvName(std::string_view prefix, std::string_view flag);

// Applies values of etcd's converted flags (flag -> text, as given in one source) to `config`. The
// auto-compaction pair is applied together (a missing one takes etcd's default: mode periodic,
// retention 0 = off). InvalidArgument naming `source`'s spelling of the flag (`spell(flag)`).
absl::Status ApplyEtcdValues(const std::map<std::string, std::string>& values,
                             const std::function<std::string(std::string_view flag)>& spell,
                             ServerConfig& config);

// "http://host:port" or "https://host:port" (a trailing '/' allowed) -> {"https", "host:port"}.
// InvalidArgument quoting `url` otherwise.
struct ClientUrl {
  std::string scheme;
  std::string address;  // host:port
};
absl::StatusOr<ClientUrl> ParseClientUrl(std::string_view url);

// Checks a comma-separated list of client URLs (advertise-client-urls).
absl::Status CheckClientUrls(std::string_view urls);

}  // namespace revkv::server::config
