// etcd's names and the environment variables (etcd_flags.h).
#include "server/config/etcd_flags.h"

#include <cctype>

#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "server/config/settings.h"
#include "server/config/units.h"

namespace revkv::server::config {

namespace {

// revkv settings that etcd 3.4 spells the same, with the same meaning. quota-backend-bytes counts once
// the setting exists.
constexpr std::string_view kSameNames[] = {
    "name",      "data-dir", "max-txn-ops",     "max-request-bytes", "quota-backend-bytes",
    "cert-file", "key-file", "trusted-ca-file", "client-cert-auth",  "advertise-client-urls",
    "log-level",
};

// One URL from a flag that takes a comma-separated list, as etcd does; revkv listens on one address.
absl::StatusOr<ClientUrl> OneUrl(std::string_view text) {
  std::vector<std::string> urls = absl::StrSplit(std::string(text), ',', absl::SkipWhitespace());
  if (urls.empty()) return absl::InvalidArgumentError("no URL given");
  if (urls.size() > 1) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' names {} URLs: revkv listens on one address (give one URL, e.g. http://0.0.0.0:2379)", text,
        urls.size()));
  }
  return ParseClientUrl(urls[0]);
}

absl::Status ApplyListenClientUrls(std::string_view text, ServerConfig& config) {
  absl::StatusOr<ClientUrl> url = OneUrl(text);
  if (!url.ok()) return url.status();
  config.listen = url->address;
  config.listen_scheme = url->scheme;  // checked against the TLS settings once all are known
  return absl::OkStatus();
}

absl::Status ApplyListenMetricsUrls(std::string_view text, ServerConfig& config) {
  absl::StatusOr<ClientUrl> url = OneUrl(text);
  if (!url.ok()) return url.status();
  if (url->scheme != "http") {
    return absl::InvalidArgumentError(
        fmt::format("'{}': the ops endpoint speaks plain HTTP only (use http://)", text));
  }
  config.metrics_listen = url->address;
  return absl::OkStatus();
}

// etcd's --auto-compaction-mode and --auto-compaction-retention as revkv's two history windows: periodic
// keeps the revisions of the last <retention> (a duration, or a whole number of hours) and no count;
// revision keeps the last <retention> revisions and no time; a retention of 0 turns compaction off
// (history ends only at an explicit Compact).
absl::Status ApplyAutoCompaction(std::string_view mode, std::string_view retention, ServerConfig& config,
                                 const std::function<std::string(std::string_view)>& spell) {
  if (mode != "periodic" && mode != "revision") {
    return absl::InvalidArgumentError(fmt::format("{}: invalid value '{}' (accepted: periodic, revision)",
                                                  spell("auto-compaction-mode"), mode));
  }
  const std::string retention_flag = spell("auto-compaction-retention");
  if (mode == "revision") {
    absl::StatusOr<uint64_t> revisions = ParseCount(retention);
    if (!revisions.ok()) {
      return absl::InvalidArgumentError(fmt::format("{}: with mode revision, a number of revisions: {}",
                                                    retention_flag,
                                                    std::string(revisions.status().message())));
    }
    config.history_revisions = *revisions;
    config.history_duration = absl::ZeroDuration();
    return absl::OkStatus();
  }
  absl::Duration window;
  if (absl::StatusOr<uint64_t> hours = ParseCount(retention); hours.ok()) {
    if (*hours > 24 * 366)
      return absl::InvalidArgumentError(fmt::format("{}: at most 8784 hours", retention_flag));
    window = absl::Hours(static_cast<int64_t>(*hours));  // etcd: a bare number is hours
  } else {
    absl::StatusOr<absl::Duration> parsed = ParseDurationValue(retention);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: with mode periodic, a duration or a number of hours: {}", retention_flag,
                      std::string(parsed.status().message())));
    }
    window = *parsed;
  }
  config.history_revisions = 0;
  config.history_duration = window;
  return absl::OkStatus();
}

}  // namespace

const std::vector<EtcdFlag>& EtcdFlags() {
  static const std::vector<EtcdFlag>* const kFlags = new std::vector<EtcdFlag>{
      {"listen-client-urls", "listen", "URL",
       "etcd's name for --listen, as one URL: http://HOST:PORT (https:// with the TLS flags)"},
      {"listen-metrics-urls", "metrics-listen", "URL",
       "etcd's name for --metrics-listen, as one URL: http://HOST:PORT"},
      {"auto-compaction-mode", "history-revisions, history-duration", "MODE",
       "etcd's auto-compaction, as --history-revisions and --history-duration: periodic (keep "
       "--auto-compaction-retention of time) or revision (keep that many revisions)"},
      {"auto-compaction-retention", "history-revisions, history-duration", "N|DURATION",
       "etcd's auto-compaction retention: hours or a duration (periodic), revisions (revision); 0 = history "
       "ends only at an explicit Compact"},
  };
  return *kFlags;
}

bool IsEtcdName(std::string_view revkv_flag) {
  for (std::string_view name : kSameNames) {
    if (name == revkv_flag) return true;
  }
  return false;
}

std::string EnvName(std::string_view prefix, std::string_view flag) {
  std::string name(prefix);
  for (char c : flag) name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

absl::Status ApplyEtcdValues(const std::map<std::string, std::string>& values,
                             const std::function<std::string(std::string_view flag)>& spell,
                             ServerConfig& config) {
  const auto prefixed = [&](std::string_view flag, const absl::Status& status) {
    return status.ok() ? status
                       : absl::InvalidArgumentError(
                             fmt::format("{}: {}", spell(flag), std::string(status.message())));
  };
  if (auto it = values.find("listen-client-urls"); it != values.end()) {
    if (absl::Status s = prefixed(it->first, ApplyListenClientUrls(it->second, config)); !s.ok()) return s;
  }
  if (auto it = values.find("listen-metrics-urls"); it != values.end()) {
    if (absl::Status s = prefixed(it->first, ApplyListenMetricsUrls(it->second, config)); !s.ok()) return s;
  }
  const auto mode = values.find("auto-compaction-mode");
  const auto retention = values.find("auto-compaction-retention");
  if (mode != values.end() || retention != values.end()) {
    return ApplyAutoCompaction(mode != values.end() ? std::string_view(mode->second) : "periodic",
                               retention != values.end() ? std::string_view(retention->second) : "0", config,
                               spell);
  }
  return absl::OkStatus();
}

absl::StatusOr<ClientUrl> ParseClientUrl(std::string_view url) {
  std::string_view rest = url;
  ClientUrl out;
  if (rest.starts_with("http://")) {
    out.scheme = "http";
    rest.remove_prefix(7);
  } else if (rest.starts_with("https://")) {
    out.scheme = "https";
    rest.remove_prefix(8);
  } else {
    return absl::InvalidArgumentError(
        fmt::format("invalid URL '{}' (expected http://HOST:PORT or https://HOST:PORT)", url));
  }
  if (rest.ends_with("/")) rest.remove_suffix(1);
  if (absl::Status s = ValidateAddress(rest); !s.ok()) {
    return absl::InvalidArgumentError(fmt::format("invalid URL '{}': {}", url, std::string(s.message())));
  }
  out.address = std::string(rest);
  return out;
}

absl::Status CheckClientUrls(std::string_view urls) {
  if (urls.empty()) return absl::OkStatus();  // derived from --listen
  const std::vector<std::string> list = absl::StrSplit(std::string(urls), ',', absl::SkipWhitespace());
  for (const std::string& url : list) {
    absl::StatusOr<ClientUrl> parsed = ParseClientUrl(url);
    if (!parsed.ok()) return parsed.status();
    const std::string host = parsed->address.substr(0, parsed->address.rfind(':'));
    if (host == "0.0.0.0" || host == "[::]") {
      return absl::InvalidArgumentError(
          fmt::format("'{}' advertises a wildcard address, which clients cannot connect to", url));
    }
  }
  return absl::OkStatus();
}

}  // namespace revkv::server::config
