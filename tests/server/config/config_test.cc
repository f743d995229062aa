// Tests of the server configuration: defaults, flags, the TOML file, their precedence, every kind of
// error, --help/--version, Describe(), the derived IDs, and that the packaged deploy/revkv.toml and
// docs/configuration.md agree with the code.
#include "server/config/config.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/config/etcd_flags.h"
#include "server/config/settings.h"
#include "server/config/version.h"

namespace revkv::server {
namespace {

// Every flag the server must have (the brief's list); a setting missing from the table fails here.
const std::vector<std::string> kExpectedFlags = {"name",
                                                 "listen",
                                                 "advertise-client-urls",
                                                 "metrics-listen",
                                                 "workers",
                                                 "data-dir",
                                                 "fsync",
                                                 "fsync-interval",
                                                 "wal-segment-size",
                                                 "checkpoint-interval",
                                                 "checkpoint-keep",
                                                 "history-revisions",
                                                 "history-duration",
                                                 "watch-progress-notify-interval",
                                                 "max-heap",
                                                 "nursery-size",
                                                 "evacuation-reserve",
                                                 "gc-threads",
                                                 "quota-backend-bytes",
                                                 "max-request-bytes",
                                                 "max-txn-ops",
                                                 "measure-reads-before-durable",
                                                 "cert-file",
                                                 "key-file",
                                                 "trusted-ca-file",
                                                 "client-cert-auth",
                                                 "auth-token-ttl",
                                                 "bcrypt-cost",
                                                 "log-level",
                                                 "log-format"};

std::string TempPath(const std::string& name) {
  return testing::TempDir() + "/revkv_config_" + std::to_string(getpid()) + "_" + name;
}

// Files written by a test, removed when the test program ends.
std::vector<std::string>& CreatedFiles() {
  static std::vector<std::string> files;
  return files;
}

class RemoveCreatedFiles : public testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& path : CreatedFiles()) std::remove(path.c_str());
  }
};
testing::Environment* const kRemoveCreatedFiles = testing::AddGlobalTestEnvironment(new RemoveCreatedFiles);

std::string WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << contents;
  CreatedFiles().push_back(path);
  return path;
}

// A file of the source tree. (Joined by std::filesystem, not `std::string(REVKV_SOURCE_DIR) + "..."`:
// GCC 12 at -O2 reports a libstdc++ false positive, -Warray-bounds in the inlined copy, for a
// concatenation whose left side has a compile-time length, depending on that length, that is, on
// where the tree is checked out.)
std::string SourceFile(const char* relative) {
  return (std::filesystem::path(REVKV_SOURCE_DIR) / relative).string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ServerConfig Parse(const std::vector<std::string>& args) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(args);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return ServerConfig{};
  EXPECT_FALSE(parsed->exit_text.has_value());
  return parsed->config;
}

// The error message for `args`, which must be rejected with InvalidArgument.
std::string Error(const std::vector<std::string>& args) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(args);
  EXPECT_FALSE(parsed.ok()) << "accepted: " << testing::PrintToString(args);
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

#define EXPECT_CONTAINS(haystack, needle)                                                              \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (needle) << "' not in:\n" \
                                                                   << (haystack)

TEST(Config, DefaultsNeedNoFlags) {
  const ServerConfig config = Parse({});
  EXPECT_EQ(config.name, "default");
  EXPECT_EQ(config.listen, "127.0.0.1:2379");
  EXPECT_EQ(config.metrics_listen, "127.0.0.1:2381");
  EXPECT_GE(config.workers, 1);  // resolved from "one per CPU"
  EXPECT_EQ(config.data_dir, "./revkv-data");
  EXPECT_EQ(config.fsync, FsyncMode::kAlways);
  EXPECT_EQ(config.fsync_interval, absl::Milliseconds(10));
  EXPECT_EQ(config.wal_segment_size, 64u << 20);
  EXPECT_EQ(config.checkpoint_interval, 100000u);
  EXPECT_EQ(config.checkpoint_keep, 2);
  EXPECT_EQ(config.history_revisions, 10000u);
  EXPECT_EQ(config.history_duration, absl::ZeroDuration());
  EXPECT_EQ(config.max_heap, uint64_t{2} << 30);
  EXPECT_EQ(config.nursery_size, 4u << 20);
  EXPECT_FALSE(config.evacuation_reserve);  // off since major collections evacuate only sparse chunks
  EXPECT_EQ(config.max_request_bytes, 1572864u);
  EXPECT_EQ(config.max_txn_ops, 128);
  EXPECT_FALSE(config.tls.enabled());
  EXPECT_FALSE(config.tls.client_cert_auth);
  EXPECT_EQ(config.log_level, LogLevel::kInfo);
  EXPECT_EQ(config.log_format, LogFormat::kText);
  EXPECT_EQ(config.config_file, "");
  EXPECT_EQ(config.member_id, DeriveMemberId("default", "./revkv-data"));
  EXPECT_EQ(config.cluster_id, DeriveClusterId({config.member_id}));
  EXPECT_NE(config.member_id, 0u);
}

TEST(Config, FlagsSetEverySetting) {
  const std::string cert = WriteFile("cert.pem", "cert");
  const std::string key = WriteFile("key.pem", "key");
  const std::string ca = WriteFile("ca.pem", "ca");
  const ServerConfig config = Parse({"--name",
                                     "node-a",
                                     "--listen",
                                     "0.0.0.0:12379",
                                     "--metrics-listen=",
                                     "--workers",
                                     "3",
                                     "--data-dir",
                                     "/var/lib/x",
                                     "--fsync",
                                     "interval",
                                     "--fsync-interval",
                                     "250ms",
                                     "--wal-segment-size",
                                     "16MiB",
                                     "--checkpoint-interval",
                                     "0",
                                     "--checkpoint-keep",
                                     "5",
                                     "--history-revisions",
                                     "0",
                                     "--history-duration",
                                     "1h",
                                     "--max-heap",
                                     "8GiB",
                                     "--nursery-size",
                                     "512KiB",
                                     "--gc-threads",
                                     "3",
                                     "--max-request-bytes",
                                     "2097152",
                                     "--max-txn-ops",
                                     "1024",
                                     "--cert-file",
                                     cert,
                                     "--key-file",
                                     key,
                                     "--trusted-ca-file",
                                     ca,
                                     "--client-cert-auth",
                                     "--log-level",
                                     "debug",
                                     "--log-format",
                                     "json"});
  EXPECT_EQ(config.name, "node-a");
  EXPECT_EQ(config.listen, "0.0.0.0:12379");
  EXPECT_EQ(config.metrics_listen, "");  // disabled
  EXPECT_EQ(config.workers, 3);
  EXPECT_EQ(config.data_dir, "/var/lib/x");
  EXPECT_EQ(config.fsync, FsyncMode::kInterval);
  EXPECT_EQ(config.fsync_interval, absl::Milliseconds(250));
  EXPECT_EQ(config.wal_segment_size, 16u << 20);
  EXPECT_EQ(config.checkpoint_interval, 0u);
  EXPECT_EQ(config.checkpoint_keep, 5);
  EXPECT_EQ(config.history_revisions, 0u);
  EXPECT_EQ(config.history_duration, absl::Hours(1));
  EXPECT_EQ(config.max_heap, uint64_t{8} << 30);
  EXPECT_EQ(config.nursery_size, 512u << 10);
  EXPECT_EQ(config.gc_threads, 3);
  EXPECT_EQ(config.max_request_bytes, 2097152u);
  EXPECT_EQ(config.max_txn_ops, 1024);
  EXPECT_EQ(config.tls.cert_file, cert);
  EXPECT_EQ(config.tls.key_file, key);
  EXPECT_EQ(config.tls.trusted_ca_file, ca);
  EXPECT_TRUE(config.tls.client_cert_auth);
  EXPECT_EQ(config.log_level, LogLevel::kDebug);
  EXPECT_EQ(config.log_format, LogFormat::kJson);
  EXPECT_EQ(config.member_id, DeriveMemberId("node-a", "/var/lib/x"));
}

TEST(Config, EqualsFormAndLastOccurrenceWins) {
  const ServerConfig config = Parse({"--max-heap=1GiB", "--listen=127.0.0.1:1", "--listen", "127.0.0.1:2"});
  EXPECT_EQ(config.max_heap, uint64_t{1} << 30);
  EXPECT_EQ(config.listen, "127.0.0.1:2");
  EXPECT_FALSE(Parse({"--client-cert-auth=false"}).tls.client_cert_auth);
  EXPECT_FALSE(Parse({"--evacuation-reserve=off"}).evacuation_reserve);
  EXPECT_EQ(Parse({"--gc-threads=2"}).gc_threads, 2);
  EXPECT_EQ(Parse({}).gc_threads, 0);
  EXPECT_CONTAINS(Error({"--gc-threads=65"}), "value 65 out of range: must be 0 to 64");
  EXPECT_TRUE(Parse({"--evacuation-reserve", "on"}).evacuation_reserve);
}

TEST(Config, TomlFileSetsSettings) {
  const std::string path = WriteFile("all.toml", R"(
# every kind of value
name = "from-file"
listen = "127.0.0.1:3000"
metrics_listen = "127.0.0.1:3001"
workers = 2
data_dir = "/tmp/revkv-file"
fsync = "none"
fsync_interval = "1s"
wal_segment_size = 1048576        # an integer is bytes
checkpoint_interval = 5_000
checkpoint_keep = 3
history_revisions = 42
history_duration = "30m"
max_heap = "3GiB"
nursery_size = "1MiB"
evacuation_reserve = "off"
max_request_bytes = 4096
max_txn_ops = 7
client_cert_auth = false
log_level = "warn"
log_format = "json"
)");
  const ServerConfig config = Parse({"--config", path});
  EXPECT_EQ(config.config_file, path);
  EXPECT_EQ(config.name, "from-file");
  EXPECT_EQ(config.listen, "127.0.0.1:3000");
  EXPECT_EQ(config.metrics_listen, "127.0.0.1:3001");
  EXPECT_EQ(config.workers, 2);
  EXPECT_EQ(config.data_dir, "/tmp/revkv-file");
  EXPECT_EQ(config.fsync, FsyncMode::kNone);
  EXPECT_EQ(config.fsync_interval, absl::Seconds(1));
  EXPECT_EQ(config.wal_segment_size, 1048576u);
  EXPECT_EQ(config.checkpoint_interval, 5000u);
  EXPECT_EQ(config.checkpoint_keep, 3);
  EXPECT_EQ(config.history_revisions, 42u);
  EXPECT_EQ(config.history_duration, absl::Minutes(30));
  EXPECT_EQ(config.max_heap, uint64_t{3} << 30);
  EXPECT_EQ(config.nursery_size, 1u << 20);
  EXPECT_FALSE(config.evacuation_reserve);
  EXPECT_EQ(config.max_request_bytes, 4096u);
  EXPECT_EQ(config.max_txn_ops, 7);
  EXPECT_EQ(config.log_level, LogLevel::kWarn);
  EXPECT_EQ(config.log_format, LogFormat::kJson);
}

TEST(Config, PrecedenceIsDefaultsThenFileThenFlags) {
  const std::string path = WriteFile("precedence.toml", "fsync = \"interval\"\nmax_txn_ops = 64\n");
  // The file beats the default; the flag beats the file, wherever it stands relative to --config.
  ServerConfig config = Parse({"--max-txn-ops", "32", "--config", path});
  EXPECT_EQ(config.fsync, FsyncMode::kInterval);  // file
  EXPECT_EQ(config.max_txn_ops, 32);              // flag over file
  EXPECT_EQ(config.max_heap, uint64_t{2} << 30);  // default: in neither
  config = Parse({"--config", path, "--fsync", "always"});
  EXPECT_EQ(config.fsync, FsyncMode::kAlways);
  EXPECT_EQ(config.max_txn_ops, 64);
}

TEST(Config, CommandLineErrorsNameTheFlagAndAcceptedValues) {
  EXPECT_CONTAINS(Error({"--bogus"}), "--bogus");
  EXPECT_CONTAINS(Error({"--bogus"}), "--help");
  EXPECT_CONTAINS(Error({"stray-argument"}), "stray-argument");
  EXPECT_CONTAINS(Error({"--fsync=sometimes"}),
                  "--fsync: invalid value 'sometimes' (accepted: always, interval, none)");
  EXPECT_CONTAINS(
      Error({"--log-level=verbose"}),
      "--log-level: invalid value 'verbose' (accepted: trace, debug, info, warn, error, fatal, panic, "
      "dpanic)");
  EXPECT_CONTAINS(Error({"--log-format=xml"}), "accepted: text, json");
  EXPECT_CONTAINS(Error({"--max-heap=-1GiB"}), "--max-heap: invalid size '-1GiB': must not be negative");
  EXPECT_CONTAINS(Error({"--wal-segment-size=12 parsecs"}), "--wal-segment-size: invalid size");
  EXPECT_CONTAINS(Error({"--wal-segment-size=1KiB"}),
                  "--wal-segment-size: value 1KiB out of range: must be 64KiB to 4GiB");
  EXPECT_CONTAINS(Error({"--max-heap=1MiB"}), "--max-heap: value 1MiB out of range");
  EXPECT_CONTAINS(Error({"--listen=127.0.0.1:70000"}),
                  "--listen: invalid address '127.0.0.1:70000': port 70000 is out of range 0-65535");
  EXPECT_CONTAINS(Error({"--listen=127.0.0.1"}), "--listen: invalid address '127.0.0.1': no port");
  EXPECT_CONTAINS(Error({"--listen=http://127.0.0.1:2379"}), "not a URL");
  EXPECT_CONTAINS(Error({"--listen=::1:2379"}), "brackets");
  EXPECT_CONTAINS(Error({"--listen=:2379"}), "no host");
  EXPECT_CONTAINS(Error({"--metrics-listen=localhost:abc"}), "--metrics-listen: invalid address");
  EXPECT_CONTAINS(Error({"--fsync-interval=5"}),
                  "--fsync-interval: invalid duration '5': a unit is required");
  EXPECT_CONTAINS(Error({"--fsync-interval=0"}), "--fsync-interval: value 0 out of range");
  EXPECT_CONTAINS(Error({"--history-duration=-5m"}),
                  "--history-duration: invalid duration '-5m': must not be negative");
  EXPECT_CONTAINS(Error({"--workers=5000"}), "--workers: value 5000 out of range: must be 0 to 1024");
  EXPECT_CONTAINS(Error({"--workers=-1"}), "--workers: invalid value '-1': must not be negative");
  EXPECT_CONTAINS(Error({"--max-txn-ops=0"}), "--max-txn-ops: value 0 out of range");
  EXPECT_CONTAINS(Error({"--checkpoint-keep=0"}), "--checkpoint-keep: value 0 out of range");
  EXPECT_CONTAINS(Error({"--checkpoint-interval=often"}),
                  "--checkpoint-interval: invalid value 'often': expected a whole number");
  EXPECT_CONTAINS(Error({"--name="}), "--name: invalid name");
  EXPECT_CONTAINS(Error({"--data-dir="}), "--data-dir: the data directory must not be empty");
  EXPECT_CONTAINS(Error({"--client-cert-auth=maybe"}), "client-cert-auth");
  EXPECT_CONTAINS(Error({"--listen"}), "--listen");  // value missing
}

TEST(Config, InconsistentSettingsAreRefused) {
  const std::string cert = WriteFile("c.pem", "cert");
  const std::string key = WriteFile("k.pem", "key");
  const std::string ca = WriteFile("a.pem", "ca");
  EXPECT_CONTAINS(Error({"--key-file", key}), "--key-file is set but --cert-file is not");
  EXPECT_CONTAINS(Error({"--cert-file", cert}), "--cert-file is set but --key-file is not");
  EXPECT_CONTAINS(Error({"--trusted-ca-file", ca}), "--trusted-ca-file needs TLS");
  EXPECT_CONTAINS(Error({"--client-cert-auth"}), "--client-cert-auth needs TLS");
  EXPECT_CONTAINS(Error({"--cert-file", cert, "--key-file", key, "--client-cert-auth"}),
                  "--client-cert-auth needs --trusted-ca-file");
  EXPECT_CONTAINS(Error({"--cert-file", TempPath("missing.pem"), "--key-file", key}),
                  "--cert-file: cannot read '" + TempPath("missing.pem") + "': No such file or directory");
  EXPECT_CONTAINS(Error({"--cert-file", cert, "--key-file", testing::TempDir()}), "is a directory");
  EXPECT_CONTAINS(Error({"--listen=127.0.0.1:2000", "--metrics-listen=127.0.0.1:2000"}),
                  "--metrics-listen and --listen are both 127.0.0.1:2000");
  EXPECT_CONTAINS(Error({"--max-heap=64MiB", "--nursery-size=16MiB", "--workers=4"}),
                  "--nursery-size (16MiB) times --workers (4) is more than half of --max-heap (64MiB)");
  // TLS with every file present is fine.
  const ServerConfig config =
      Parse({"--cert-file", cert, "--key-file", key, "--trusted-ca-file", ca, "--client-cert-auth"});
  EXPECT_TRUE(config.tls.enabled());
}

TEST(Config, ConfigFileErrorsNameTheFileKeyAndLine) {
  EXPECT_CONTAINS(Error({"--config", TempPath("absent.toml")}),
                  "config file " + TempPath("absent.toml") + ": cannot read: No such file or directory");
  const std::string syntax = WriteFile("syntax.toml", "name = \"ok\"\nfsync = \n");
  EXPECT_CONTAINS(Error({"--config", syntax}), "config file " + syntax + ":2:");
  const std::string unknown = WriteFile("unknown.toml", "name = \"x\"\nfsynk = \"always\"\n");
  EXPECT_CONTAINS(Error({"--config", unknown}), "config file " + unknown + ":2: unknown key 'fsynk'");
  const std::string hyphen = WriteFile("hyphen.toml", "fsync-interval = \"10ms\"\n");
  EXPECT_CONTAINS(Error({"--config", hyphen}), "did you mean fsync_interval?");
  const std::string table = WriteFile("table.toml", "[tls]\ncert_file = \"x\"\n");
  EXPECT_CONTAINS(Error({"--config", table}), "unknown key 'tls' (the file is flat");
  const std::string type = WriteFile("type.toml", "\n\nfsync = 1\n");
  EXPECT_CONTAINS(Error({"--config", type}),
                  "config file " + type + ":3: key 'fsync' must be a string, not an integer");
  const std::string value = WriteFile("value.toml", "fsync = \"sometimes\"\n");
  EXPECT_CONTAINS(Error({"--config", value}),
                  "config file " + value +
                      ":1: key 'fsync': invalid value 'sometimes' (accepted: always, interval, none)");
  const std::string negative = WriteFile("negative.toml", "max_heap = -1\n");
  EXPECT_CONTAINS(Error({"--config", negative}), "key 'max_heap': invalid size '-1': must not be negative");
  const std::string unitless = WriteFile("unitless.toml", "fsync_interval = 10\n");
  EXPECT_CONTAINS(Error({"--config", unitless}), "key 'fsync_interval' must be a string such as \"10ms\"");
  const std::string boolean = WriteFile("bool.toml", "client_cert_auth = \"yes\"\n");
  EXPECT_CONTAINS(Error({"--config", boolean}), "key 'client_cert_auth' must be true or false, not a string");
  const std::string nested = WriteFile("nested.toml", "config = \"other.toml\"\n");
  EXPECT_CONTAINS(Error({"--config", nested}), "unknown key 'config'");
  // A flag does not rescue a bad file: the file is read first and must be valid on its own.
  EXPECT_CONTAINS(Error({"--config", value, "--fsync", "always"}), "key 'fsync'");
}

// `listen = 127.0.0.1:2379` is a TOML syntax error that toml++ reports as a bad "time"; the message
// must say to quote the value instead, with the line to write.
TEST(Config, AnUnquotedValueInTheFileIsExplained) {
  const std::string address = WriteFile("unquoted_address.toml", "name = \"a\"\nlisten = 127.0.0.1:2379\n");
  const std::string error = Error({"--config", address});
  EXPECT_CONTAINS(error, "config file " + address + ":2: the value of 'listen' is not quoted");
  EXPECT_CONTAINS(error, "write listen = \"127.0.0.1:2379\"");
  EXPECT_EQ(error.find("time"), std::string::npos) << error;
  const std::string size = WriteFile("unquoted_size.toml", "max_heap = 64MiB   # comment\n");
  EXPECT_CONTAINS(Error({"--config", size}),
                  "a size with a unit is a string and must be quoted in TOML): write "
                  "max_heap = \"64MiB\"");
  const std::string duration = WriteFile("unquoted_duration.toml", "\nfsync_interval = 10ms\n");
  EXPECT_CONTAINS(Error({"--config", duration}),
                  ":2: the value of 'fsync_interval' is not quoted (a duration");
  // Other syntax errors keep toml++'s own description, with the column.
  const std::string other = WriteFile("other_syntax.toml", "name = \"unterminated\n");
  EXPECT_CONTAINS(Error({"--config", other}), "config file " + other + ":1:");
  EXPECT_EQ(Error({"--config", other}).find("is not quoted"), std::string::npos);
}

TEST(Config, DescribeEchoesSizesAndDurationsInTheUnitsGiven) {
  const ServerConfig flags = Parse({"--max-heap", "1TB", "--history-duration", "90s", "--nursery-size=8MiB"});
  const std::string text = flags.Describe();
  EXPECT_CONTAINS(text, "max-heap             1TB\n");
  EXPECT_CONTAINS(text, "history-duration     90s\n");
  EXPECT_CONTAINS(text, "nursery-size         8MiB\n");
  EXPECT_EQ(flags.max_heap, 1000000000000u);
  // From the file as well, and a flag given after it wins in the echo as in the value.
  const std::string file = WriteFile("as_given.toml", "max_heap = \"2000MB\"\nwal_segment_size = 1048576\n");
  const ServerConfig from_file = Parse({"--config", file});
  EXPECT_CONTAINS(from_file.Describe(), "max-heap             2000MB\n");
  EXPECT_CONTAINS(from_file.Describe(), "wal-segment-size     1048576\n");
  EXPECT_CONTAINS(Parse({"--config", file, "--max-heap", "3GiB"}).Describe(), "max-heap             3GiB\n");
  // Not given: the formatter's choice.
  EXPECT_CONTAINS(Parse({}).Describe(), "max-heap             2GiB\n");
}

// ----- etcd's names and the environment (server/config/etcd_flags.h) -----

ServerConfig ParseEnv(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(args, env);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->config : ServerConfig{};
}

std::string EnvError(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(args, env);
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(EtcdNames, EtcdsFlagsSetTheSettingsTheyMean) {
  const ServerConfig c =
      Parse({"--listen-client-urls", "http://0.0.0.0:12379", "--listen-metrics-urls",
             "http://127.0.0.1:12381/", "--advertise-client-urls", "http://db-1.example:12379", "--name",
             "n1", "--data-dir", "/d", "--max-txn-ops", "7", "--max-request-bytes", "4096"});
  EXPECT_EQ(c.listen, "0.0.0.0:12379");
  EXPECT_EQ(c.metrics_listen, "127.0.0.1:12381");
  EXPECT_EQ(c.AdvertisedClientUrls(), std::vector<std::string>{"http://db-1.example:12379"});
  EXPECT_FALSE(c.advertise_derived);
  EXPECT_EQ(c.name, "n1");
  EXPECT_EQ(c.data_dir, "/d");
  EXPECT_EQ(c.max_txn_ops, 7);
  EXPECT_EQ(c.max_request_bytes, 4096u);

  // Auto-compaction: revision keeps a count, periodic a time (a bare number is hours), 0 turns it off.
  const ServerConfig revision =
      Parse({"--auto-compaction-mode=revision", "--auto-compaction-retention=1000"});
  EXPECT_EQ(revision.history_revisions, 1000u);
  EXPECT_EQ(revision.history_duration, absl::ZeroDuration());
  const ServerConfig periodic =
      Parse({"--auto-compaction-mode", "periodic", "--auto-compaction-retention", "30m"});
  EXPECT_EQ(periodic.history_revisions, 0u);
  EXPECT_EQ(periodic.history_duration, absl::Minutes(30));
  EXPECT_EQ(Parse({"--auto-compaction-retention", "3"}).history_duration, absl::Hours(3));  // mode periodic
  const ServerConfig off = Parse({"--auto-compaction-mode", "periodic"});
  EXPECT_EQ(off.history_revisions, 0u);
  EXPECT_EQ(off.history_duration, absl::ZeroDuration());
}

TEST(EtcdNames, TheirMistakesAreNamed) {
  EXPECT_CONTAINS(
      Error({"--listen-client-urls", "http://127.0.0.1:1,http://127.0.0.1:2"}),
      "--listen-client-urls: 'http://127.0.0.1:1,http://127.0.0.1:2' names 2 URLs: revkv listens on one "
      "address");
  EXPECT_CONTAINS(Error({"--listen-client-urls", "127.0.0.1:2379"}),
                  "--listen-client-urls: invalid URL '127.0.0.1:2379' (expected http://HOST:PORT");
  EXPECT_CONTAINS(Error({"--listen-client-urls", "https://127.0.0.1:2379"}),
                  "names an https:// URL: set --cert-file and --key-file too");
  EXPECT_CONTAINS(Error({"--listen-metrics-urls", "https://127.0.0.1:2381"}), "plain HTTP only");
  EXPECT_CONTAINS(Error({"--listen", "127.0.0.1:1", "--listen-client-urls", "http://127.0.0.1:2"}),
                  "--listen and --listen-client-urls both set listen: give one of them");
  EXPECT_CONTAINS(Error({"--auto-compaction-mode", "hourly"}),
                  "--auto-compaction-mode: invalid value 'hourly' (accepted: periodic, revision)");
  EXPECT_CONTAINS(Error({"--auto-compaction-mode=revision", "--auto-compaction-retention=1h"}),
                  "--auto-compaction-retention: with mode revision, a number of revisions");
  EXPECT_CONTAINS(Error({"--advertise-client-urls", "http://0.0.0.0:2379"}), "advertises a wildcard address");
  EXPECT_CONTAINS(Error({"--initial-cluster", "a=http://x:2380"}),
                  "unknown flag or argument: --initial-cluster");
}

TEST(EtcdNames, TheAdvertisedUrlIsNeverAWildcard) {
  EXPECT_EQ(Parse({}).advertise_client_urls, "http://127.0.0.1:2379");
  EXPECT_TRUE(Parse({}).advertise_derived);
  const ServerConfig wildcard = Parse({"--listen", "0.0.0.0:2379"});
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(wildcard.advertise_client_urls, "http://" + std::string(host) + ":2379");
}

// Values for every setting, none of them the default (tied to the table by the check below).
std::map<std::string, std::string> NonDefaultValues() {
  return {{"name", "node-a"},
          {"listen", "0.0.0.0:12379"},
          {"advertise-client-urls", "http://a.example:12379,http://b.example:12379"},
          {"metrics-listen", ""},
          {"workers", "3"},
          {"data-dir", "/var/lib/x"},
          {"fsync", "interval"},
          {"fsync-interval", "250ms"},
          {"wal-segment-size", "16MiB"},
          {"checkpoint-interval", "0"},
          {"checkpoint-keep", "5"},
          {"history-revisions", "0"},
          {"history-duration", "1h"},
          {"watch-progress-notify-interval", "1m"},
          {"max-heap", "8GiB"},
          {"nursery-size", "512KiB"},
          {"evacuation-reserve", "off"},
          {"gc-threads", "3"},
          {"quota-backend-bytes", "1GiB"},
          {"max-request-bytes", "2097152"},
          {"max-txn-ops", "1024"},
          {"measure-reads-before-durable", "on"},
          {"cert-file", WriteFile("env_cert.pem", "cert")},
          {"key-file", WriteFile("env_key.pem", "key")},
          {"trusted-ca-file", WriteFile("env_ca.pem", "ca")},
          {"client-cert-auth", "true"},
          {"auth-token-ttl", "600"},
          {"bcrypt-cost", "5"},
          {"log-level", "debug"},
          {"log-format", "json"}};
}

// REVKV_<NAME> comes from the table of settings, so a setting added there has its variable at once:
// every setting set through its variable gives the configuration the flags give.
TEST(Environment, EverySettingHasARevkvVariable) {
  const std::map<std::string, std::string> values = NonDefaultValues();
  std::vector<std::string> flags;
  std::map<std::string, std::string> env;
  for (const config::Setting& setting : config::Settings()) {
    auto it = values.find(setting.flag);
    ASSERT_NE(it, values.end()) << "give NonDefaultValues() a value for --" << setting.flag;
    env[config::EnvName("REVKV_", setting.flag)] = it->second;
    if (setting.kind == config::ValueKind::kBool) {
      flags.push_back("--" + setting.flag + "=" + it->second);
    } else {
      flags.push_back("--" + setting.flag);
      flags.push_back(it->second);
    }
  }
  EXPECT_EQ(env.count("REVKV_MAX_HEAP"), 1u);
  EXPECT_EQ(env.count("REVKV_WATCH_PROGRESS_NOTIFY_INTERVAL"), 1u);
  const ServerConfig from_flags = Parse(flags);
  const ServerConfig from_env = ParseEnv({}, env);
  EXPECT_EQ(from_env.Describe(), from_flags.Describe());
  EXPECT_NE(from_env.Describe(), Parse({}).Describe());
}

TEST(Environment, EtcdsVariablesSetWhatEtcdsFlagsSet) {
  const ServerConfig c = ParseEnv({}, {{"ETCD_NAME", "e1"},
                                       {"ETCD_DATA_DIR", "/e"},
                                       {"ETCD_LISTEN_CLIENT_URLS", "http://0.0.0.0:22379"},
                                       {"ETCD_ADVERTISE_CLIENT_URLS", "http://e1.example:22379"},
                                       {"ETCD_LISTEN_METRICS_URLS", "http://127.0.0.1:22381"},
                                       {"ETCD_AUTO_COMPACTION_MODE", "revision"},
                                       {"ETCD_AUTO_COMPACTION_RETENTION", "500"},
                                       {"ETCD_MAX_TXN_OPS", "9"}});
  EXPECT_EQ(c.name, "e1");
  EXPECT_EQ(c.data_dir, "/e");
  EXPECT_EQ(c.listen, "0.0.0.0:22379");
  EXPECT_EQ(c.advertise_client_urls, "http://e1.example:22379");
  EXPECT_EQ(c.metrics_listen, "127.0.0.1:22381");
  EXPECT_EQ(c.history_revisions, 500u);
  EXPECT_EQ(c.max_txn_ops, 9);
  // revkv's own names are not read with ETCD_ (etcd has no --max-heap), and errors name the variable.
  EXPECT_EQ(ParseEnv({}, {{"ETCD_MAX_HEAP", "8GiB"}}).max_heap, uint64_t{2} << 30);
  EXPECT_CONTAINS(EnvError({}, {{"REVKV_FSYNC", "sometimes"}}), "REVKV_FSYNC: invalid value 'sometimes'");
  EXPECT_CONTAINS(EnvError({}, {{"ETCD_LISTEN_CLIENT_URLS", "localhost:2379"}}),
                  "ETCD_LISTEN_CLIENT_URLS: invalid URL");
}

// etcd 3.4's --log-level takes debug, info, warn, error, dpanic, panic and fatal; an etcd environment with
// any of them starts revkv. The three most severe are one level here, shown as "fatal".
TEST(Environment, EtcdsMostSevereLogLevelsAreAccepted) {
  for (const char* level : {"fatal", "panic", "dpanic"}) {
    SCOPED_TRACE(level);
    EXPECT_EQ(ParseEnv({}, {{"ETCD_LOG_LEVEL", level}}).log_level, LogLevel::kFatal);
    EXPECT_EQ(Parse({"--log-level", level}).log_level, LogLevel::kFatal);
  }
  EXPECT_EQ(LogLevelName(LogLevel::kFatal), "fatal");
}

TEST(Environment, VariablesThatNameNothingAreReportedNotFatal) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine({}, {{"REVKV_MAX_HEAPP", "1GiB"},
                                                             {"ETCD_INITIAL_CLUSTER", "a=http://x:2380"},
                                                             {"ETCDCTL_API", "3"},
                                                             {"HOME", "/root"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->warnings.size(), 2u) << testing::PrintToString(parsed->warnings);
  EXPECT_CONTAINS(parsed->warnings[0], "ETCD_INITIAL_CLUSTER is set but is not a revkv setting: ignored");
  EXPECT_CONTAINS(parsed->warnings[1], "REVKV_MAX_HEAPP is set but is not a revkv setting: ignored");
}

// defaults < TOML file < ETCD_* < REVKV_* < flags.
TEST(Environment, PrecedenceIsDefaultsFileEtcdVariablesRevkvVariablesFlags) {
  const std::string file = WriteFile("precedence_env.toml", "max_txn_ops = 10\n");
  const std::map<std::string, std::string> both = {{"ETCD_MAX_TXN_OPS", "20"}, {"REVKV_MAX_TXN_OPS", "30"}};
  EXPECT_EQ(ParseEnv({}, {}).max_txn_ops, 128);
  EXPECT_EQ(ParseEnv({"--config", file}, {}).max_txn_ops, 10);
  EXPECT_EQ(ParseEnv({"--config", file}, {{"ETCD_MAX_TXN_OPS", "20"}}).max_txn_ops, 20);
  EXPECT_EQ(ParseEnv({"--config", file}, both).max_txn_ops, 30);
  EXPECT_EQ(ParseEnv({"--config", file, "--max-txn-ops", "40"}, both).max_txn_ops, 40);
  // A converted etcd name follows the same order: REVKV_LISTEN beats ETCD_LISTEN_CLIENT_URLS, and a flag
  // beats both.
  const std::map<std::string, std::string> listen = {{"ETCD_LISTEN_CLIENT_URLS", "http://127.0.0.1:1"},
                                                     {"REVKV_LISTEN", "127.0.0.1:2"}};
  EXPECT_EQ(ParseEnv({}, listen).listen, "127.0.0.1:2");
  EXPECT_EQ(ParseEnv({"--listen-client-urls", "http://127.0.0.1:3"}, listen).listen, "127.0.0.1:3");
}

TEST(Config, HelpExplainsEveryFlagWithDefaultsAndUnits) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine({"--help"});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->exit_text.has_value());
  const std::string& help = *parsed->exit_text;
  EXPECT_EQ(help, HelpText());
  for (const std::string& flag : kExpectedFlags) EXPECT_CONTAINS(help, "--" + flag);
  for (const char* text : {"--config", "--version", "--help", "[default: 127.0.0.1:2379]", "[default: 64MiB]",
                           "[default: 10ms]", "[default: 1572864]", "[default: 0 (one per CPU)]",
                           "[default: always]", "[default: 2GiB]", "[default: ./revkv-data]", "KiB, MiB, GiB",
                           "ms, s, m, h", "always (", "interval (", "none (", "SIZE", "DURATION"}) {
    EXPECT_CONTAINS(help, text);
  }
  EXPECT_TRUE(ParseCommandLine({"-h"})->exit_text.has_value());
}

TEST(Config, TableHasExactlyTheExpectedSettings) {
  std::vector<std::string> flags;
  for (const config::Setting& setting : config::Settings()) flags.push_back(setting.flag);
  EXPECT_EQ(flags, kExpectedFlags);
}

TEST(Config, VersionFlagPrintsTheVersionClientsSee) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine({"--version"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->exit_text.value_or(""), "revkv-server " + std::string(kServerVersion) + "\n");
}

// Semantic Versioning 2.0.0's own grammar (semver.org, "Is there a suggested regular expression").
const std::regex kSemver(
    R"(^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*))"
    R"((?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?)"
    R"((?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$)");

// etcd clients compare the server's version with etcd versions ("at least 3.4.0"): it must be valid
// semver, compare equal to etcd 3.4.0 (build metadata does not count; a pre-release would sort below it)
// and still name revkv and its own version.
TEST(Config, TheVersionIsSemverThatComparesAsEtcd34) {
  const std::string version(kServerVersion);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(version, m, kSemver)) << version;
  EXPECT_EQ(m[1].str() + "." + m[2].str() + "." + m[3].str(), std::string(kEtcdApiVersion));
  EXPECT_EQ(m[4].str(), "") << "a pre-release sorts below " << kEtcdApiVersion << ": " << version;
  EXPECT_EQ(m[5].str(), "revkv." + std::string(kRevkvVersion)) << version;
  EXPECT_EQ(kEtcdApiVersion.substr(0, 4), "3.4.");
}

TEST(ConfigDeathTest, ParseConfigExitsZeroOnHelpAndVersion) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const char* help_argv[] = {"revkv-server", "--help", nullptr};
  // The child's stdout goes to /dev/null: the text itself is checked through ParseCommandLine above.
  EXPECT_EXIT(
      {
        (void)std::freopen("/dev/null", "w", stdout);
        ParseConfig(2, const_cast<char**>(help_argv)).IgnoreError();
      },
      testing::ExitedWithCode(0), "");
  const char* version_argv[] = {"revkv-server", "--version", nullptr};
  EXPECT_EXIT(
      {
        (void)std::freopen("/dev/null", "w", stdout);
        ParseConfig(2, const_cast<char**>(version_argv)).IgnoreError();
      },
      testing::ExitedWithCode(0), "");
  const char* bad_argv[] = {"revkv-server", "--fsync=sometimes", nullptr};
  EXPECT_EQ(ParseConfig(2, const_cast<char**>(bad_argv)).status().code(), absl::StatusCode::kInvalidArgument);
  const char* good_argv[] = {"revkv-server", "--name=n", nullptr};
  EXPECT_EQ(ParseConfig(2, const_cast<char**>(good_argv))->config.name, "n");
}

TEST(Config, DescribeHasOneLinePerSetting) {
  ServerConfig config = Parse({"--metrics-listen="});
  const std::string text = config.Describe();
  const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_EQ(lines, config::Settings().size() + 3);  // + member-id, cluster-id, config
  EXPECT_CONTAINS(text, "fsync                always\n");
  EXPECT_CONTAINS(text, "wal-segment-size     64MiB\n");
  EXPECT_CONTAINS(text, "metrics-listen       (disabled)\n");
  EXPECT_CONTAINS(text, "cert-file            (none)\n");
  EXPECT_CONTAINS(text, "workers              " + std::to_string(config.workers) + "\n");
  EXPECT_CONTAINS(text, "config               (none");
}

TEST(Config, DerivedIdsAreStableAndDistinct) {
  const uint64_t a = DeriveMemberId("default", "/var/lib/revkv");
  EXPECT_EQ(a, DeriveMemberId("default", "/var/lib/revkv"));
  EXPECT_EQ(a, DeriveMemberId("default", "/var/lib/./revkv/"));  // the same directory, normalized
  EXPECT_NE(a, DeriveMemberId("other", "/var/lib/revkv"));
  EXPECT_NE(a, DeriveMemberId("default", "/var/lib/revkv2"));
  EXPECT_NE(DeriveMemberId("ab", "/c"), DeriveMemberId("a", "b/c"));  // fields are separated
  // A relative directory means the same as its absolute path from the current directory.
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  EXPECT_EQ(DeriveMemberId("n", "revkv-data"), DeriveMemberId("n", std::string(cwd) + "/revkv-data"));
  EXPECT_EQ(DeriveClusterId({1, 2, 3}), DeriveClusterId({3, 1, 2}));
  EXPECT_NE(DeriveClusterId({1}), DeriveClusterId({2}));
  EXPECT_NE(DeriveClusterId({a}), a);
}

// The file packaging installs is valid and, apart from the paths it chooses, says what the defaults say.
TEST(Config, DeployTomlIsValidAndMatchesTheDefaults) {
  const std::string path = SourceFile("deploy/revkv.toml");
  const ServerConfig config = Parse({"--config", path});
  const ServerConfig defaults = Parse({});
  for (const config::Setting& setting : config::Settings()) {
    if (setting.flag == "data-dir") continue;
    EXPECT_EQ(setting.get(config), setting.get(defaults)) << setting.flag;
  }
  EXPECT_EQ(config.data_dir, "/var/lib/revkv");
}

// etcd's --quota-backend-bytes: a size, 0 for the default (3/4 of the heap), a negative number for none.
TEST(Config, QuotaBackendBytesTakesASizeZeroOrANegativeNumber) {
  EXPECT_EQ(Parse({}).quota_backend_bytes, 0);
  EXPECT_EQ(Parse({}).EffectiveQuotaBytes(), static_cast<int64_t>((uint64_t{2} << 30) / 4 * 3));
  EXPECT_EQ(Parse({"--quota-backend-bytes", "8MiB"}).EffectiveQuotaBytes(), 8 << 20);
  EXPECT_EQ(Parse({"--quota-backend-bytes=1048576"}).EffectiveQuotaBytes(), 1048576);
  EXPECT_EQ(Parse({"--quota-backend-bytes=-1"}).quota_backend_bytes, -1);
  EXPECT_EQ(Parse({"--quota-backend-bytes=-1"}).EffectiveQuotaBytes(), 0);
  EXPECT_EQ(Parse({"--max-heap", "1GiB"}).EffectiveQuotaBytes(), 768 << 20);
  EXPECT_CONTAINS(Error({"--quota-backend-bytes=-x"}), "--quota-backend-bytes");
  EXPECT_CONTAINS(Error({"--quota-backend-bytes", "lots"}), "--quota-backend-bytes");
  const std::string file = WriteFile("quota.toml", "quota_backend_bytes = \"16MiB\"\n");
  EXPECT_EQ(Parse({"--config", file}).EffectiveQuotaBytes(), 16 << 20);
}

// --repair-wal is an action on the command line, never a setting a config file could leave on.
TEST(Config, RepairWalIsACommandLineActionOnly) {
  EXPECT_FALSE(Parse({}).repair_wal);
  EXPECT_TRUE(Parse({"--repair-wal", "--data-dir", "/tmp/x"}).repair_wal);
  const std::string file = WriteFile("repair.toml", "repair_wal = true\n");
  EXPECT_CONTAINS(Error({"--config", file}), "unknown key 'repair_wal'");
  EXPECT_CONTAINS(HelpText(), "--repair-wal");
  EXPECT_CONTAINS(ReadFile(SourceFile("docs/configuration.md")), "`--repair-wal`");
}

// --restore-snapshot FILE is an action on the command line too, and not together with --repair-wal.
TEST(Config, RestoreSnapshotIsACommandLineActionOnly) {
  EXPECT_EQ(Parse({}).restore_snapshot, "");
  EXPECT_EQ(Parse({"--restore-snapshot", "/tmp/s.db", "--data-dir", "/tmp/x"}).restore_snapshot, "/tmp/s.db");
  const std::string file = WriteFile("restore.toml", "restore_snapshot = \"/tmp/s.db\"\n");
  EXPECT_CONTAINS(Error({"--config", file}), "unknown key 'restore_snapshot'");
  EXPECT_CONTAINS(Error({"--restore-snapshot", "/tmp/s.db", "--repair-wal"}), "separate actions");
  EXPECT_CONTAINS(HelpText(), "--restore-snapshot");
  EXPECT_CONTAINS(ReadFile(SourceFile("docs/configuration.md")), "`--restore-snapshot`");
}

// docs/configuration.md documents every flag and TOML key.
TEST(Config, DocumentationCoversEverySetting) {
  const std::string docs = ReadFile(SourceFile("docs/configuration.md"));
  ASSERT_FALSE(docs.empty());
  const std::string deploy = ReadFile(SourceFile("deploy/revkv.toml"));
  for (const config::Setting& setting : config::Settings()) {
    EXPECT_CONTAINS(docs, "`--" + setting.flag + "`");
    EXPECT_CONTAINS(docs, "`" + setting.TomlKey() + "`");
    EXPECT_CONTAINS(deploy, setting.TomlKey() + " =");  // set or shown commented out
  }
}

}  // namespace
}  // namespace revkv::server
