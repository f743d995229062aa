// revkv server — configuration (public header).
//
// Every setting has a built-in default, may be set in a TOML file named by --config, by an environment
// variable (REVKV_<NAME>; ETCD_<NAME> for etcd's names) and by a command-line flag (revkv's name or, for
// some, etcd's); later sources win: defaults < file < ETCD_* < REVKV_* < flags. The TOML keys are the flag
// names with
// '-' replaced by '_', at the top level of the file (flat: no tables). docs/configuration.md lists every
// setting; deploy/revkv.toml is the file packaging installs.
//
// Values: sizes are bytes or a number with a unit (B, KiB, MiB, GiB, TiB, and decimal KB, MB, GB, TB):
// "64MiB", "1.5GiB", 1572864. Durations are a number with a unit (ns, us, ms, s, m, h), possibly
// compound: "10ms", "5s", "1m30s"; "0" is zero.
//
// Typical use in main:
//   absl::StatusOr<CommandLine> config = ParseConfig(argc, argv);   // --help/--version exit(0) here
//   if (!config.ok()) { std::cerr << "revkv-server: " << config.status().message() << "\n"; return 2; }
//   spdlog::info("starting with\n{}", config->Describe());
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/wal/wal.h"

namespace revkv::server {

// FsyncMode (when the write-ahead log is made durable) and FsyncModeName come from server/wal/wal.h.

// kFatal logs only what stops the server; it is etcd's "dpanic", "panic" and "fatal" levels in one.
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kFatal };
enum class LogFormat { kText, kJson };

std::string_view LogLevelName(LogLevel level);     // "trace", ..., "error"
std::string_view LogFormatName(LogFormat format);  // "text", "json"

struct TlsConfig {
  std::string cert_file;          // server certificate chain (PEM); TLS is on when set
  std::string key_file;           // its private key (PEM); set exactly when cert_file is
  std::string trusted_ca_file;    // CA bundle (PEM) that client certificates must chain to
  bool client_cert_auth = false;  // require and verify a client certificate (needs trusted_ca_file)

  bool enabled() const { return !cert_file.empty(); }
};

// The server's settings after parsing: complete and validated. Plain value type.
struct ServerConfig {
  // Identity
  std::string name = "default";  // member name, reported by MemberList
  uint64_t member_id = 0;        // derived: DeriveMemberId(name, data_dir)
  uint64_t cluster_id = 0;       // derived: DeriveClusterId({member_id})

  // Network
  std::string listen = "127.0.0.1:2379";  // gRPC, host:port
  std::string listen_scheme;              // "http" or "https" if etcd's --listen-client-urls gave it
  // The URLs MemberList reports, comma-separated. After parsing never empty: when not given it is
  // derived from `listen` (the host's name for a wildcard address) and advertise_derived is set.
  std::string advertise_client_urls;
  bool advertise_derived = false;
  std::string metrics_listen = "127.0.0.1:2381";  // ops HTTP (/metrics, /healthz, /debug/gc); "" = off
  int workers = 0;                                // gRPC worker threads; after parsing >= 1

  // Storage
  std::string data_dir = "./revkv-data";
  FsyncMode fsync = FsyncMode::kAlways;
  absl::Duration fsync_interval = absl::Milliseconds(10);  // used with FsyncMode::kInterval
  uint64_t wal_segment_size = uint64_t{64} << 20;          // bytes
  uint64_t checkpoint_interval = 100000;  // revisions between automatic checkpoints; 0 = only on request
  int checkpoint_keep = 2;                // checkpoints kept on disk, >= 1

  // History (like etcd's auto-compaction): reads at any of the last `history_revisions` revisions and at
  // any revision committed within the last `history_duration` succeed; a revision is compacted away once
  // it is outside both windows. 0 turns a window off; both 0 = history ends only at an explicit Compact.
  uint64_t history_revisions = 10000;
  absl::Duration history_duration = absl::ZeroDuration();

  // Watch: how often watchers created with progress_notify get a progress notification (etcd's
  // --experimental-watch-progress-notify-interval, default 10 minutes).
  absl::Duration watch_progress_notify_interval = absl::Minutes(10);

  // Memory
  uint64_t max_heap = uint64_t{2} << 30;      // bytes; allocation beyond it fails cleanly
  uint64_t nursery_size = uint64_t{4} << 20;  // bytes per worker thread
  bool evacuation_reserve = false;            // runtime::HeapOptions::retain_evacuation_reserve
  int gc_threads = 0;                         // runtime::HeapOptions::collector_threads; 0: one per CPU

  // Limits
  // etcd's --quota-backend-bytes: writes that add data are refused (NOSPACE alarm) once the store's bytes
  // (Store::StoreBytes) would reach it. 0: 3/4 of max_heap (EffectiveQuotaBytes); negative: no quota.
  int64_t quota_backend_bytes = 0;
  uint64_t max_request_bytes = 1572864;  // largest gRPC request (etcd's default, 1.5 MiB)
  int max_txn_ops = 128;                 // operations in one Txn (etcd's default)

  // Measurement only: reads show commits whose log records are not durable yet (unsafe; see
  // StoreOptions::measure_reads_before_durable).
  bool measure_reads_before_durable = false;

  TlsConfig tls;

  // Auth (etcd's flags): how long a simple token lives unused, in seconds, and the bcrypt cost of
  // password hashes.
  uint64_t auth_token_ttl = 300;
  int bcrypt_cost = 10;

  // Logging
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kText;

  std::string config_file;  // the TOML file the settings were read from; "" when none
  // Sizes and durations as the operator wrote them (flag -> text, e.g. "max-heap" -> "1TB"), so that
  // Describe() echoes a value in the unit it was given in rather than in one the formatter picks.
  std::map<std::string, std::string, std::less<>> as_given;
  bool repair_wal = false;  // --repair-wal (command line only): repair the log in data_dir and exit
  // --restore-snapshot FILE (command line only): restore the snapshot into data_dir and exit; "" = none.
  std::string restore_snapshot;

  // The quota in bytes: quota_backend_bytes, 3/4 of max_heap for 0, or 0 (no quota) when negative.
  int64_t EffectiveQuotaBytes() const {
    if (quota_backend_bytes < 0) return 0;
    if (quota_backend_bytes == 0) return static_cast<int64_t>(max_heap / 4 * 3);
    return quota_backend_bytes;
  }

  // advertise_client_urls, split.
  std::vector<std::string> AdvertisedClientUrls() const;

  // One line per setting, "name: value", for the startup log. Secrets are never part of the config
  // (TLS settings are file paths), so everything is shown.
  std::string Describe() const;
};

// What the command line asks for: run with a configuration, or print text and exit 0.
struct CommandLine {
  ServerConfig config;
  std::optional<std::string> exit_text;  // set for --help and --version: print it to stdout, exit 0
  std::vector<std::string> warnings;     // for the log: environment variables that name no setting
};

// Parses `args` (without the program name) and `env` (the environment: name -> value): the file named
// by --config, then ETCD_* and REVKV_* variables, then the flags (server/config/etcd_flags.h). Returns
// InvalidArgument naming the flag, variable or TOML key and the accepted values on any bad input
// (unknown flag or key, bad value, inconsistent settings). Reads the config file; does not exit or print.
absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args,
                                             const std::map<std::string, std::string>& env = {});

// For main: as ParseCommandLine over argv[1..argc) and the process's environment; on --help or
// --version prints the text to stdout and calls std::exit(0). Errors are returned for main to print
// and exit non-zero (2 by convention).
absl::StatusOr<CommandLine> ParseConfig(int argc, char** argv);

// The log format asked for, read without a full parse, for reporting a configuration error in that
// format: the last --log-format on the command line, else REVKV_LOG_FORMAT, else the log_format of the
// --config file (as far as it reads); text unless one of them says json. Never fails.
LogFormat RequestedLogFormat(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env);
// As above over argv[1..argc) and the process's environment.
LogFormat RequestedLogFormat(int argc, char** argv);

// The URL MemberList advertises when none is configured: http:// (https:// with TLS) and `listen`, with
// the host's name in place of a wildcard address (0.0.0.0, [::]), which clients cannot connect to.
std::string DeriveAdvertiseUrl(const ServerConfig& config);

// The --help text (also what --help prints).
std::string HelpText();

// The member ID: the 64-bit FNV-1a hash of "revkv-member", NUL, the name, NUL and the absolute,
// lexically normalized data directory (relative to the current directory). Stable across restarts for
// the same name and directory; two members differ if either differs. Never 0. Does no I/O.
uint64_t DeriveMemberId(std::string_view name, std::string_view data_dir);

// The cluster ID: FNV-1a over the member IDs in ascending order (as etcd derives it from its members).
// A single-node server has a cluster of one. Never 0.
uint64_t DeriveClusterId(std::vector<uint64_t> member_ids);

}  // namespace revkv::server
