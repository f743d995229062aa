// The table of settings and the checks across settings (see settings.h).
#include "server/config/settings.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "fmt/format.h"
#include "server/config/etcd_flags.h"
#include "server/config/units.h"

namespace revkv::server::config {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = kKiB << 10;
constexpr uint64_t kGiB = kMiB << 10;

absl::Status OutOfRange(const std::string& value, const std::string& min, const std::string& max) {
  return absl::InvalidArgumentError(fmt::format("value {} out of range: must be {} to {}", value, min, max));
}

// A whole number stored in an integer field, within [min, max].
template <class T>
Setting CountSetting(std::string flag, std::string group, std::string help, T ServerConfig::*field,
                     uint64_t min, uint64_t max) {
  Setting s{std::move(flag), std::move(group), "N", std::move(help), ValueKind::kCount, nullptr, nullptr, ""};
  s.set = [field, min, max](std::string_view text, ServerConfig& config) -> absl::Status {
    absl::StatusOr<uint64_t> value = ParseCount(text);
    if (!value.ok()) return value.status();
    if (*value < min || *value > max) {
      return OutOfRange(std::to_string(*value), std::to_string(min), std::to_string(max));
    }
    config.*field = static_cast<T>(*value);
    return absl::OkStatus();
  };
  s.get = [field](const ServerConfig& config) { return std::to_string(config.*field); };
  return s;
}

// A size in bytes within [min, max]; shown with a unit, or as plain bytes when `plain` (etcd's style
// for --max-request-bytes).
Setting SizeSetting(std::string flag, std::string group, std::string help, uint64_t ServerConfig::*field,
                    uint64_t min, uint64_t max, bool plain = false) {
  Setting s{std::move(flag),  std::move(group), "SIZE",  std::move(help),
            ValueKind::kSize, nullptr,          nullptr, ""};
  s.set = [field, min, max](std::string_view text, ServerConfig& config) -> absl::Status {
    absl::StatusOr<uint64_t> value = ParseSize(text);
    if (!value.ok()) return value.status();
    if (*value < min || *value > max) return OutOfRange(std::string(text), FormatSize(min), FormatSize(max));
    config.*field = *value;
    return absl::OkStatus();
  };
  s.get = [field, plain](const ServerConfig& config) {
    return plain ? std::to_string(config.*field) : FormatSize(config.*field);
  };
  return s;
}

// A duration within [min, max].
Setting DurationSetting(std::string flag, std::string group, std::string help,
                        absl::Duration ServerConfig::*field, absl::Duration min, absl::Duration max) {
  Setting s{std::move(flag),      std::move(group), "DURATION", std::move(help),
            ValueKind::kDuration, nullptr,          nullptr,    ""};
  s.set = [field, min, max](std::string_view text, ServerConfig& config) -> absl::Status {
    absl::StatusOr<absl::Duration> value = ParseDurationValue(text);
    if (!value.ok()) return value.status();
    if (*value < min || *value > max) {
      return OutOfRange(std::string(text), FormatDurationValue(min), FormatDurationValue(max));
    }
    config.*field = *value;
    return absl::OkStatus();
  };
  s.get = [field](const ServerConfig& config) { return FormatDurationValue(config.*field); };
  return s;
}

// One of a fixed set of words.
template <class E>
Setting EnumSetting(std::string flag, std::string group, std::string type_name, std::string help,
                    E ServerConfig::*field, std::vector<std::pair<std::string, E>> choices) {
  Setting s{std::move(flag),
            std::move(group),
            std::move(type_name),
            std::move(help),
            ValueKind::kEnum,
            nullptr,
            nullptr,
            ""};
  s.set = [field, choices](std::string_view text, ServerConfig& config) -> absl::Status {
    std::string accepted;
    for (const auto& [name, value] : choices) {
      if (name == text) {
        config.*field = value;
        return absl::OkStatus();
      }
      accepted += accepted.empty() ? name : ", " + name;
    }
    return absl::InvalidArgumentError(fmt::format("invalid value '{}' (accepted: {})", text, accepted));
  };
  s.get = [field, choices](const ServerConfig& config) {
    for (const auto& [name, value] : choices) {
      if (value == config.*field) return name;
    }
    return std::string("?");
  };
  return s;
}

// A string; `check` validates it (may be null).
Setting TextSetting(std::string flag, std::string group, std::string type_name, std::string help,
                    std::string ServerConfig::*field, absl::Status (*check)(std::string_view)) {
  Setting s{std::move(flag),
            std::move(group),
            std::move(type_name),
            std::move(help),
            ValueKind::kText,
            nullptr,
            nullptr,
            ""};
  s.set = [field, check](std::string_view text, ServerConfig& config) -> absl::Status {
    if (check != nullptr) {
      if (absl::Status status = check(text); !status.ok()) return status;
    }
    config.*field = std::string(text);
    return absl::OkStatus();
  };
  s.get = [field](const ServerConfig& config) { return config.*field; };
  return s;
}

// A TLS file path (validated for readability in ValidateConfig, once the whole set is known).
Setting TlsFileSetting(std::string flag, std::string help, std::string TlsConfig::*field) {
  Setting s{std::move(flag), "TLS", "FILE", std::move(help), ValueKind::kText, nullptr, nullptr, ""};
  s.set = [field](std::string_view text, ServerConfig& config) -> absl::Status {
    config.tls.*field = std::string(text);
    return absl::OkStatus();
  };
  s.get = [field](const ServerConfig& config) { return config.tls.*field; };
  return s;
}

absl::Status CheckName(std::string_view name) {
  if (name.empty() || name.size() > 255) {
    return absl::InvalidArgumentError("invalid name: must be 1 to 255 bytes long");
  }
  for (unsigned char c : name) {
    if (std::iscntrl(c)) {
      return absl::InvalidArgumentError("invalid name: control characters are not allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckListen(std::string_view address) { return ValidateAddress(address); }

absl::Status CheckMetricsListen(std::string_view address) {
  return address.empty() ? absl::OkStatus() : ValidateAddress(address);
}

absl::Status CheckDataDir(std::string_view dir) {
  if (dir.empty()) return absl::InvalidArgumentError("the data directory must not be empty");
  return absl::OkStatus();
}

std::vector<Setting> BuildSettings() {
  std::vector<Setting> s;
  s.push_back(TextSetting("name", "Identity", "NAME",
                          "Member name, reported by MemberList. With --data-dir it determines the member and "
                          "cluster IDs",
                          &ServerConfig::name, CheckName));

  s.push_back(TextSetting("listen", "Network", "HOST:PORT",
                          "gRPC address for clients (etcd's client port, so etcdctl needs no flags). "
                          "0.0.0.0:2379 listens on every interface; port 0 picks a free port",
                          &ServerConfig::listen, CheckListen));
  Setting advertise = TextSetting(
      "advertise-client-urls", "Network", "URLS",
      "Client URLs MemberList reports (etcd's flag), comma-separated: http://HOST:PORT, https:// with TLS",
      &ServerConfig::advertise_client_urls, CheckClientUrls);
  advertise.default_text = "from --listen, with the host's name for 0.0.0.0";
  s.push_back(std::move(advertise));
  s.push_back(TextSetting("metrics-listen", "Network", "HOST:PORT",
                          "Ops HTTP address serving /metrics (Prometheus), /healthz and /debug/gc; empty "
                          "disables it",
                          &ServerConfig::metrics_listen, CheckMetricsListen));
  Setting workers = CountSetting("workers", "Network", "gRPC worker threads; 0 = one per CPU",
                                 &ServerConfig::workers, 0, 1024);
  workers.default_text = "0 (one per CPU)";
  s.push_back(std::move(workers));

  s.push_back(TextSetting("data-dir", "Storage", "DIR",
                          "Directory of the write-ahead log and checkpoints; created if missing",
                          &ServerConfig::data_dir, CheckDataDir));
  s.push_back(EnumSetting<FsyncMode>(
      "fsync", "Storage", "MODE",
      "When the write-ahead log is fsynced: always (before each write is acknowledged), interval (every "
      "--fsync-interval: a crash may lose that much acknowledged data), none (left to the OS: a crash may "
      "lose acknowledged data)",
      &ServerConfig::fsync,
      {{"always", FsyncMode::kAlways}, {"interval", FsyncMode::kInterval}, {"none", FsyncMode::kNone}}));
  s.push_back(DurationSetting("fsync-interval", "Storage",
                              "Time between fsyncs with --fsync=interval (up to 1m)",
                              &ServerConfig::fsync_interval, absl::Microseconds(1), absl::Minutes(1)));
  s.push_back(SizeSetting("wal-segment-size", "Storage",
                          "Size at which a log segment file is closed and the next begun (64KiB to 4GiB)",
                          &ServerConfig::wal_segment_size, 64 * kKiB, 4 * kGiB));
  s.push_back(CountSetting("checkpoint-interval", "Storage",
                           "Revisions between automatic checkpoints; 0 = only on request",
                           &ServerConfig::checkpoint_interval, 0, UINT64_MAX));
  s.push_back(CountSetting("checkpoint-keep", "Storage", "Checkpoints kept on disk (1 to 1000)",
                           &ServerConfig::checkpoint_keep, 1, 1000));

  s.push_back(
      CountSetting("history-revisions", "History",
                   "Past revisions kept readable, like etcd's revision auto-compaction; 0 = no "
                   "revision window (with --history-duration 0: only an explicit Compact ends history)",
                   &ServerConfig::history_revisions, 0, UINT64_MAX));
  s.push_back(DurationSetting("history-duration", "History",
                              "Revisions committed within this time stay readable, like etcd's periodic "
                              "auto-compaction; 0 = no time window",
                              &ServerConfig::history_duration, absl::ZeroDuration(), absl::Hours(24 * 366)));

  s.push_back(DurationSetting("watch-progress-notify-interval", "History",
                              "How often watchers that asked for progress_notify get a progress "
                              "notification, like etcd's --experimental-watch-progress-notify-interval "
                              "(100ms to 24h)",
                              &ServerConfig::watch_progress_notify_interval, absl::Milliseconds(100),
                              absl::Hours(24)));

  s.push_back(SizeSetting("max-heap", "Memory",
                          "Maximum heap size; allocations beyond it fail cleanly (64MiB to 16TiB)",
                          &ServerConfig::max_heap, 64 * kMiB, 16384 * kGiB));
  s.push_back(SizeSetting("nursery-size", "Memory",
                          "Nursery of each worker thread, where transactions allocate (64KiB to 1GiB)",
                          &ServerConfig::nursery_size, 64 * kKiB, kGiB));
  s.push_back(EnumSetting<bool>(
      "evacuation-reserve", "Memory", "on|off",
      "on: after a major collection, keep as many free pages mapped as the live data uses, for the "
      "evacuations to come (RSS stays near twice the live data); off (default): return free pages to the OS",
      &ServerConfig::evacuation_reserve, {{"on", true}, {"off", false}}));
  Setting gc_threads = CountSetting("gc-threads", "Memory",
                                    "Threads that trace a major collection in parallel (the collecting "
                                    "thread included); 0 = one per CPU (1 to 64 otherwise)",
                                    &ServerConfig::gc_threads, 0, 64);
  gc_threads.default_text = "0 (one per CPU)";
  s.push_back(std::move(gc_threads));

  Setting quota{"quota-backend-bytes",
                "Limits",
                "SIZE",
                "etcd's space quota: a write that adds data and would take the store's bytes (the heap's old "
                "and large-object space) to this size raises the NOSPACE alarm and is refused until "
                "`etcdctl alarm disarm`; 0 = 3/4 of --max-heap; a negative number = no quota",
                ValueKind::kSize,
                nullptr,
                nullptr,
                "0 (3/4 of --max-heap)"};
  quota.set = [](std::string_view text, ServerConfig& config) -> absl::Status {
    if (!text.empty() && text.front() == '-') {  // etcd: a negative quota turns the quota off
      const std::string digits(text.substr(1));
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
          digits.size() > 18) {
        return absl::InvalidArgumentError(
            fmt::format("invalid value '{}': a size, 0, or a negative whole number (no quota)", text));
      }
      const int64_t negative = -static_cast<int64_t>(std::stoll(digits));
      config.quota_backend_bytes = negative < 0 ? negative : 0;
      return absl::OkStatus();
    }
    absl::StatusOr<uint64_t> value = ParseSize(text);
    if (!value.ok()) return value.status();
    if (*value > static_cast<uint64_t>(INT64_MAX))
      return OutOfRange(std::string(text), "0", FormatSize(INT64_MAX));
    config.quota_backend_bytes = static_cast<int64_t>(*value);
    return absl::OkStatus();
  };
  quota.get = [](const ServerConfig& config) { return std::to_string(config.quota_backend_bytes); };
  s.push_back(std::move(quota));
  s.push_back(SizeSetting("max-request-bytes", "Limits",
                          "Largest client request accepted, in bytes (1KiB to 2GiB-1; etcd's default)",
                          &ServerConfig::max_request_bytes, kKiB, 2 * kGiB - 1, /*plain=*/true));
  s.push_back(CountSetting("max-txn-ops", "Limits",
                           "Most operations in one Txn (1 to 1000000; etcd's default)",
                           &ServerConfig::max_txn_ops, 1, 1000000));
  s.push_back(EnumSetting<bool>(
      "measure-reads-before-durable", "Measurement", "on|off",
      "FOR MEASUREMENT ONLY, never in production. on: reads answer from the newest commit before its log "
      "record is durable, so a crash can take back what a client saw; it exists to measure what serving "
      "reads at the durable revision costs",
      &ServerConfig::measure_reads_before_durable, {{"on", true}, {"off", false}}));

  s.push_back(TlsFileSetting("cert-file", "Server certificate chain (PEM); turns TLS on; needs --key-file",
                             &TlsConfig::cert_file));
  s.push_back(TlsFileSetting("key-file", "Private key (PEM) of --cert-file", &TlsConfig::key_file));
  s.push_back(TlsFileSetting(
      "trusted-ca-file", "CA certificates (PEM) that client certificates must chain to; needs --cert-file",
      &TlsConfig::trusted_ca_file));
  Setting client_auth{"client-cert-auth",
                      "TLS",
                      "",
                      "Require a client certificate and verify it against --trusted-ca-file",
                      ValueKind::kBool,
                      nullptr,
                      nullptr,
                      ""};
  client_auth.set = [](std::string_view text, ServerConfig& config) -> absl::Status {
    if (text == "true" || text == "1") {
      config.tls.client_cert_auth = true;
    } else if (text == "false" || text == "0") {
      config.tls.client_cert_auth = false;
    } else {
      return absl::InvalidArgumentError(fmt::format("invalid value '{}' (accepted: true, false)", text));
    }
    return absl::OkStatus();
  };
  client_auth.get = [](const ServerConfig& config) {
    return std::string(config.tls.client_cert_auth ? "true" : "false");
  };
  s.push_back(std::move(client_auth));

  s.push_back(CountSetting("auth-token-ttl", "Auth",
                           "Seconds a simple token (Authenticate) stays valid without being used; each use "
                           "renews it (etcd's flag and default; 1 to 31536000)",
                           &ServerConfig::auth_token_ttl, 1, 31536000));
  s.push_back(CountSetting("bcrypt-cost", "Auth",
                           "bcrypt cost of the password hashes UserAdd and UserChangePassword store (etcd's "
                           "flag and default; 4 to 31)",
                           &ServerConfig::bcrypt_cost, 4, 31));

  s.push_back(
      EnumSetting<LogLevel>("log-level", "Logging", "LEVEL",
                            "Least severe level logged: trace, debug, info, warn, error, fatal (etcd's "
                            "dpanic and panic are read as fatal)",
                            &ServerConfig::log_level,
                            {{"trace", LogLevel::kTrace},
                             {"debug", LogLevel::kDebug},
                             {"info", LogLevel::kInfo},
                             {"warn", LogLevel::kWarn},
                             {"error", LogLevel::kError},
                             {"fatal", LogLevel::kFatal},
                             {"panic", LogLevel::kFatal},
                             {"dpanic", LogLevel::kFatal}}));
  s.push_back(EnumSetting<LogFormat>("log-format", "Logging", "FORMAT",
                                     "Log line format: text (human-readable) or json (one object per line)",
                                     &ServerConfig::log_format,
                                     {{"text", LogFormat::kText}, {"json", LogFormat::kJson}}));
  return s;
}

// A readable regular file, or an error naming the flag.
absl::Status CheckReadableFile(std::string_view flag, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(fmt::format("--{}: '{}' is a directory, not a file", flag, path));
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("--{}: cannot read '{}': {}", flag, path, std::generic_category().message(errno)));
  }
  std::fclose(file);
  return absl::OkStatus();
}

}  // namespace

std::string Setting::TomlKey() const {
  std::string key = flag;
  for (char& c : key) {
    if (c == '-') c = '_';
  }
  return key;
}

void RememberAsGiven(const Setting& setting, std::string_view text, ServerConfig& config) {
  if (setting.kind == ValueKind::kSize || setting.kind == ValueKind::kDuration) {
    std::string trimmed(text);
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.erase(0, 1);
    config.as_given[setting.flag] = trimmed;
  } else {
    config.as_given.erase(setting.flag);
  }
}

const std::vector<Setting>& Settings() {
  static const std::vector<Setting>* const kSettings = new std::vector<Setting>(BuildSettings());
  return *kSettings;
}

const Setting* FindByFlag(std::string_view flag) {
  for (const Setting& setting : Settings()) {
    if (setting.flag == flag) return &setting;
  }
  return nullptr;
}

const Setting* FindByTomlKey(std::string_view key) {
  for (const Setting& setting : Settings()) {
    if (setting.TomlKey() == key) return &setting;
  }
  return nullptr;
}

absl::Status ValidateAddress(std::string_view address) {
  const auto error = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format(
        "invalid address '{}': {} (expected host:port, e.g. 127.0.0.1:2379, 0.0.0.0:2379 or [::1]:2379)",
        address, why));
  };
  if (address.find("://") != std::string_view::npos) return error("give host:port, not a URL");
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return error("no port");
  const std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) {
    return error("the port must be a number from 0 to 65535");
  }
  if (std::stoul(std::string(port)) > 65535) {
    return error(fmt::format("port {} is out of range 0-65535", port));
  }
  if (host.empty()) return error("no host");
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 4 ||
        host.substr(1, host.size() - 2).find_first_not_of("0123456789abcdefABCDEF:.%") !=
            std::string_view::npos) {
      return error("malformed IPv6 address");
    }
    return absl::OkStatus();
  }
  if (host.find(':') != std::string_view::npos) return error("put an IPv6 address in brackets");
  for (unsigned char c : host) {
    if (!std::isalnum(c) && c != '.' && c != '-' && c != '_') return error("malformed host name");
  }
  return absl::OkStatus();
}

absl::Status ValidateConfig(const ServerConfig& config) {
  const TlsConfig& tls = config.tls;
  if (config.listen_scheme == "https" && !tls.enabled()) {
    return absl::InvalidArgumentError(
        "--listen-client-urls names an https:// URL: set --cert-file and --key-file too, or use http://");
  }
  if (config.listen_scheme == "http" && tls.enabled()) {
    return absl::InvalidArgumentError(
        "--listen-client-urls names an http:// URL, but the TLS flags make the gRPC port speak TLS only: use "
        "https://");
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        tls.cert_file.empty() ? "--key-file is set but --cert-file is not: TLS needs both, or neither"
                              : "--cert-file is set but --key-file is not: TLS needs both, or neither");
  }
  if (!tls.enabled() && !tls.trusted_ca_file.empty()) {
    return absl::InvalidArgumentError("--trusted-ca-file needs TLS: set --cert-file and --key-file too");
  }
  if (tls.client_cert_auth && !tls.enabled()) {
    return absl::InvalidArgumentError("--client-cert-auth needs TLS: set --cert-file and --key-file too");
  }
  if (tls.client_cert_auth && tls.trusted_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--client-cert-auth needs --trusted-ca-file to verify client certificates against");
  }
  for (const auto& [flag, path] :
       {std::pair<std::string_view, const std::string&>{"cert-file", tls.cert_file},
        {"key-file", tls.key_file},
        {"trusted-ca-file", tls.trusted_ca_file}}) {
    if (path.empty()) continue;
    if (absl::Status status = CheckReadableFile(flag, path); !status.ok()) return status;
  }
  if (config.metrics_listen == config.listen && !config.listen.ends_with(":0")) {
    return absl::InvalidArgumentError(
        fmt::format("--metrics-listen and --listen are both {}: they need different ports", config.listen));
  }
  const unsigned __int128 nurseries = static_cast<unsigned __int128>(config.nursery_size) *
                                      static_cast<unsigned>(std::max(config.workers, 1));
  if (nurseries > config.max_heap / 2) {
    return absl::InvalidArgumentError(fmt::format(
        "--nursery-size ({}) times --workers ({}) is more than half of --max-heap ({}): raise --max-heap or "
        "lower the others",
        FormatSize(config.nursery_size), config.workers, FormatSize(config.max_heap)));
  }
  return absl::OkStatus();
}

}  // namespace revkv::server::config
