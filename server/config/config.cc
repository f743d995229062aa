// Command-line parsing with CLI11, the precedence of sources, derived IDs and Describe().
//
// Order of work in ParseCommandLine: (1) CLI11 parses the arguments into plain strings, one per
// setting, remembering which were given; (2) the built-in defaults are copied; (3) the TOML file named
// by --config is applied; (4) each given flag is applied, through the same Setting::set as the file, so
// both sources accept exactly the same values; (5) workers = 0 becomes the CPU count; (6) the checks
// across settings run; (7) the IDs are derived.
#include "server/config/config.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <thread>

#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "server/config/config_file.h"
#include "server/config/etcd_flags.h"
#include "server/config/settings.h"
#include "server/config/version.h"

extern char** environ;  // NOLINT: POSIX

namespace revkv::server {
namespace {

constexpr const char* kProgram = "revkv-server";

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t Fnv1a(uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= kFnvPrime;
  }
  return hash;
}

std::string VersionText() { return fmt::format("{} {}", kProgram, kServerVersion); }

// What CLI11 captured: one string per setting (or a bool for flags) and whether it was given.
struct CapturedFlags {
  std::deque<std::string> text;  // deque: CLI11 keeps pointers to the elements
  std::deque<bool> flag;
  std::vector<CLI::Option*> options;       // parallel to config::Settings()
  std::deque<std::string> etcd_text;       // parallel to config::EtcdFlags()
  std::vector<CLI::Option*> etcd_options;  // parallel to config::EtcdFlags()
  std::string config_file;
  bool repair_wal = false;
  std::string restore_snapshot;
};

// Declares every flag on `app`, bound to `captured`.
void DeclareFlags(CLI::App& app, CapturedFlags& captured) {
  app.description(
      "revkv-server: an in-memory key-value server speaking etcd's v3 gRPC API.\n"
      "Settings come from built-in defaults, then the TOML file given by --config, then the environment\n"
      "(ETCD_<NAME> for etcd's names, then REVKV_<NAME> for every flag, e.g. REVKV_MAX_HEAP=4GiB), then\n"
      "these flags (later sources win).");
  app.footer(
      "Sizes are bytes or a number with a unit: B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB for powers of\n"
      "1000), e.g. 64MiB, 1.5GiB, 1572864. Durations take a unit: ns, us, ms, s, m, h, e.g. 10ms, 5s, "
      "1m30s.\n"
      "In the TOML file, keys are the flag names with '_' for '-' (fsync_interval = \"10ms\"); in the\n"
      "environment, REVKV_ and the flag name in capitals with '_' for '-' (REVKV_FSYNC_INTERVAL=10ms).\n"
      "See docs/configuration.md.");
  app.get_formatter()->column_width(34);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.set_version_flag("--version", VersionText(), "Print the version and exit");
  app.add_option("--config", captured.config_file,
                 "TOML file of settings; flags given here override it [default: none]")
      ->type_name("FILE");
  // An action, not a setting: command line only, so that no config file repairs at every start.
  app.add_flag("--repair-wal", captured.repair_wal,
               "Repair a damaged write-ahead log in --data-dir and exit: move the damaged part aside "
               "(<segment>.damaged), cut the log at the last good record, print what was lost");
  app.add_option("--restore-snapshot", captured.restore_snapshot,
                 "Restore the snapshot FILE (etcdctl snapshot save) into --data-dir, which must be new or "
                 "empty, and exit: the file's checksum is verified, a damaged one is refused")
      ->type_name("FILE");

  const ServerConfig defaults;
  for (const config::Setting& setting : config::Settings()) {
    std::string shown = setting.default_text.empty() ? setting.get(defaults) : setting.default_text;
    if (shown.empty()) shown = "none";
    const std::string description = fmt::format("{} [default: {}]", setting.help, shown);
    CLI::Option* option;
    if (setting.kind == config::ValueKind::kBool) {
      captured.flag.push_back(false);
      option = app.add_flag("--" + setting.flag, captured.flag.back(), description);
    } else {
      captured.text.emplace_back();
      option = app.add_option("--" + setting.flag, captured.text.back(), description)
                   ->type_name(setting.type_name);
    }
    option->group(setting.group);
    captured.options.push_back(option);
  }
  for (const config::EtcdFlag& etcd : config::EtcdFlags()) {
    captured.etcd_text.emplace_back();
    captured.etcd_options.push_back(
        app.add_option("--" + etcd.flag, captured.etcd_text.back(), etcd.help)
            ->type_name(etcd.type_name)
            ->group(
                "etcd's flag names (--name, --data-dir, --max-txn-ops, --max-request-bytes and the TLS flags "
                "are spelt as etcd spells them)"));
  }
}

std::string SpellFlag(std::string_view flag) { return fmt::format("--{}", flag); }

// Applies `text` to `setting`, recording it as given; InvalidArgument prefixed with `source`.
absl::Status ApplySetting(const config::Setting& setting, const std::string& text, std::string_view source,
                          ServerConfig& config) {
  if (absl::Status status = setting.set(text, config); !status.ok()) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", source, std::string(status.message())));
  }
  config::RememberAsGiven(setting, text, config);
  return absl::OkStatus();
}

// The environment's part (see config/etcd_flags.h): ETCD_* (etcd's converted flags, and the settings
// etcd spells the same), then REVKV_* for every setting. Adds a warning for each ETCD_ or REVKV_
// variable that names nothing revkv has.
absl::Status ApplyEnvironment(const std::map<std::string, std::string>& env, ServerConfig& config,
                              std::vector<std::string>& warnings) {
  std::set<std::string> used;
  std::map<std::string, std::string> etcd_values;
  std::map<std::string, std::string> etcd_spelling;
  for (const config::EtcdFlag& etcd : config::EtcdFlags()) {
    const std::string name = config::EnvName("ETCD_", etcd.flag);
    if (auto it = env.find(name); it != env.end()) {
      etcd_values[etcd.flag] = it->second;
      etcd_spelling[etcd.flag] = name;
      used.insert(name);
    }
  }
  if (absl::Status s = config::ApplyEtcdValues(
          etcd_values, [&](std::string_view flag) { return etcd_spelling[std::string(flag)]; }, config);
      !s.ok()) {
    return s;
  }
  for (const char* prefix : {"ETCD_", "REVKV_"}) {
    for (const config::Setting& setting : config::Settings()) {
      if (std::string_view(prefix) == "ETCD_" && !config::IsEtcdName(setting.flag)) continue;
      const std::string name = config::EnvName(prefix, setting.flag);
      auto it = env.find(name);
      if (it == env.end()) continue;
      used.insert(name);
      if (absl::Status s = ApplySetting(setting, it->second, name, config); !s.ok()) return s;
    }
  }
  for (const auto& [name, value] : env) {
    if ((name.starts_with("ETCD_") || name.starts_with("REVKV_")) && used.count(name) == 0 &&
        !name.starts_with("ETCDCTL_")) {
      warnings.push_back(
          fmt::format("{} is set but is not a revkv setting: ignored (revkv reads ETCD_<NAME> for etcd's "
                      "flags it accepts "
                      "and REVKV_<NAME> for each of its flags: see revkv-server --help)",
                      name));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kFatal:
      return "fatal";
  }
  return "?";
}

std::string_view LogFormatName(LogFormat format) {
  switch (format) {
    case LogFormat::kText:
      return "text";
    case LogFormat::kJson:
      return "json";
  }
  return "?";
}

uint64_t DeriveMemberId(std::string_view name, std::string_view data_dir) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(std::filesystem::path(data_dir), ec);
  if (ec) dir = std::filesystem::path(data_dir);
  dir = dir.lexically_normal();
  std::string normalized = dir.string();
  while (normalized.size() > 1 && normalized.back() == '/') normalized.pop_back();  // "a/b/" == "a/b"
  uint64_t hash = Fnv1a(kFnvOffset, std::string_view("revkv-member\0", 13));
  hash = Fnv1a(hash, name);
  hash = Fnv1a(hash, std::string_view("\0", 1));
  hash = Fnv1a(hash, normalized);
  return hash == 0 ? 1 : hash;
}

uint64_t DeriveClusterId(std::vector<uint64_t> member_ids) {
  std::sort(member_ids.begin(), member_ids.end());
  uint64_t hash = Fnv1a(kFnvOffset, "revkv-cluster");
  for (uint64_t id : member_ids) {
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(id >> (56 - 8 * i));  // big-endian
    hash = Fnv1a(hash, std::string_view(bytes, 8));
  }
  return hash == 0 ? 1 : hash;
}

std::string DeriveAdvertiseUrl(const ServerConfig& config) {
  const std::string scheme = config.tls.enabled() ? "https://" : "http://";
  const size_t colon = config.listen.rfind(':');
  std::string host = config.listen.substr(0, colon);
  if (host == "0.0.0.0" || host == "[::]") {
    char name[256] = {};
    host = gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0' ? std::string(name) : "localhost";
  }
  return scheme + host + config.listen.substr(colon);
}

std::vector<std::string> ServerConfig::AdvertisedClientUrls() const {
  return absl::StrSplit(advertise_client_urls, ',', absl::SkipWhitespace());
}

std::string ServerConfig::Describe() const {
  std::string out;
  for (const config::Setting& setting : config::Settings()) {
    const auto given = as_given.find(setting.flag);
    std::string value = given != as_given.end() ? given->second : setting.get(*this);
    if (value.empty()) value = setting.flag == "metrics-listen" ? "(disabled)" : "(none)";
    out += fmt::format("{:<20} {}\n", setting.flag, value);
  }
  out += fmt::format("{:<20} {:016x}\n", "member-id", member_id);
  out += fmt::format("{:<20} {:016x}\n", "cluster-id", cluster_id);
  out +=
      fmt::format("{:<20} {}\n", "config", config_file.empty() ? "(none: defaults and flags)" : config_file);
  return out;
}

std::string HelpText() {
  CLI::App app{"", kProgram};
  CapturedFlags captured;
  DeclareFlags(app, captured);
  return app.help();
}

absl::StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args,
                                             const std::map<std::string, std::string>& env) {
  CLI::App app{"", kProgram};
  CapturedFlags captured;
  DeclareFlags(app, captured);
  CommandLine result;
  try {
    // CLI11 consumes arguments from the back of the vector. It reads "--flag=" as a flag missing its
    // value, so that form is passed as "--flag" "" (an empty value, e.g. --metrics-listen= to disable).
    std::vector<std::string> reversed;
    for (auto it = args.rbegin(); it != args.rend(); ++it) {
      if (it->size() > 3 && it->starts_with("--") && it->find('=') == it->size() - 1) {
        reversed.emplace_back();
        reversed.push_back(it->substr(0, it->size() - 1));
      } else {
        reversed.push_back(*it);
      }
    }
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    result.exit_text = app.help();
    return result;
  } catch (const CLI::CallForVersion& e) {
    result.exit_text = std::string(e.what()) + "\n";
    return result;
  } catch (const CLI::ExtrasError&) {
    std::string extras;
    for (const std::string& extra : app.remaining()) extras += (extras.empty() ? "" : " ") + extra;
    return absl::InvalidArgumentError(
        fmt::format("unknown flag or argument: {} (run '{} --help' for the flags)", extras, kProgram));
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(fmt::format("{} (run '{} --help' for the flags)", e.what(), kProgram));
  }

  ServerConfig& config = result.config;
  if (!captured.config_file.empty()) {
    if (absl::Status status = config::ApplyConfigFile(captured.config_file, config); !status.ok()) {
      return status;
    }
    config.config_file = captured.config_file;
  }
  config.repair_wal = captured.repair_wal;
  config.restore_snapshot = captured.restore_snapshot;
  if (config.repair_wal && !config.restore_snapshot.empty()) {
    return absl::InvalidArgumentError("--repair-wal and --restore-snapshot are separate actions: give one");
  }
  if (absl::Status status = ApplyEnvironment(env, config, result.warnings); !status.ok()) return status;

  // The command line: etcd's flags first, then revkv's; one setting may not be given under both names.
  std::map<std::string, std::string> etcd_values;
  std::map<std::string, std::string> set_by_etcd_flag;  // revkv setting -> the etcd flag given for it
  const std::vector<config::EtcdFlag>& etcd_flags = config::EtcdFlags();
  for (size_t i = 0; i < etcd_flags.size(); ++i) {
    if (captured.etcd_options[i]->count() == 0) continue;
    etcd_values[etcd_flags[i].flag] = captured.etcd_text[i];
    const std::vector<std::string> targets = absl::StrSplit(etcd_flags[i].sets, ", ");
    for (const std::string& target : targets) {
      set_by_etcd_flag[target] = etcd_flags[i].flag;
    }
  }
  if (absl::Status s = config::ApplyEtcdValues(etcd_values, SpellFlag, config); !s.ok()) return s;
  size_t text_index = 0, flag_index = 0;
  const std::vector<config::Setting>& settings = config::Settings();
  for (size_t i = 0; i < settings.size(); ++i) {
    const config::Setting& setting = settings[i];
    const bool is_flag = setting.kind == config::ValueKind::kBool;
    const std::string value =
        is_flag ? (captured.flag[flag_index++] ? "true" : "false") : captured.text[text_index++];
    if (captured.options[i]->count() == 0) continue;  // not given: an earlier source's value stays
    if (auto both = set_by_etcd_flag.find(setting.flag); both != set_by_etcd_flag.end()) {
      return absl::InvalidArgumentError(fmt::format("--{} and --{} both set {}: give one of them",
                                                    setting.flag, both->second, setting.flag));
    }
    if (absl::Status s = ApplySetting(setting, value, SpellFlag(setting.flag), config); !s.ok()) return s;
  }
  if (config.workers == 0) {
    config.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (absl::Status status = config::ValidateConfig(config); !status.ok()) return status;
  if (config.advertise_client_urls.empty()) {
    config.advertise_client_urls = DeriveAdvertiseUrl(config);
    config.advertise_derived = true;
  }
  config.member_id = DeriveMemberId(config.name, config.data_dir);
  config.cluster_id = DeriveClusterId({config.member_id});
  return result;
}

namespace {

std::vector<std::string> Arguments(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return args;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t equals = entry.find('=');
    if (equals != std::string::npos) env[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  return env;
}

}  // namespace

LogFormat RequestedLogFormat(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env) {
  std::optional<std::string> flag;
  std::string config_file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    // "--name value" or "--name=value"; true with the value if `arg` is that flag.
    const auto value_of = [&](std::string_view name, std::string* value) {
      if (arg == name && i + 1 < args.size()) {
        *value = args[i + 1];
        return true;
      }
      if (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=') {
        *value = std::string(arg.substr(name.size() + 1));
        return true;
      }
      return false;
    };
    std::string value;
    if (value_of("--log-format", &value)) {
      flag = value;
    } else if (value_of("--config", &value)) {
      config_file = value;
    }
  }
  if (flag.has_value()) return *flag == "json" ? LogFormat::kJson : LogFormat::kText;
  if (auto it = env.find("REVKV_LOG_FORMAT"); it != env.end()) {
    return it->second == "json" ? LogFormat::kJson : LogFormat::kText;
  }
  if (!config_file.empty()) {
    ServerConfig scratch;
    (void)config::ApplyConfigFile(config_file, scratch);  // what it read before an error still counts
    return scratch.log_format;
  }
  return LogFormat::kText;
}

LogFormat RequestedLogFormat(int argc, char** argv) {
  return RequestedLogFormat(Arguments(argc, argv), Environment());
}

absl::StatusOr<CommandLine> ParseConfig(int argc, char** argv) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(Arguments(argc, argv), Environment());
  if (!parsed.ok()) return parsed.status();
  if (parsed->exit_text) {
    std::fputs(parsed->exit_text->c_str(), stdout);
    std::fflush(stdout);
    std::exit(0);  // NOLINT(concurrency-mt-unsafe): main's thread, before any other thread exists
  }
  return parsed;
}

}  // namespace revkv::server
