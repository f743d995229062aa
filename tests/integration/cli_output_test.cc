// The revkv CLI's output as an etcd user expects it, against a real revkv-server: `get` takes a range as
// etcdctl's does and prints what etcdctl prints; `-w json|table|simple`; integers as JSON numbers; one
// JSON style across `revkv -w json`, `revkv gc watch --json` and the ops endpoint's /debug/gc.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

class CliOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"dir/a", "1"}, {"dir/b", "two words"}, {"other", "3"}}) {
      ASSERT_EQ(Revkv({"put", k, v}).exit_code, 0);
    }
  }

  CommandResult Revkv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {REVKV_CLI_BINARY, "--endpoints", server_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  // `revkv args...`: exit 0, nothing on stderr; its stdout.
  std::string Ok(const std::vector<std::string>& args) {
    const CommandResult r = Revkv(args);
    EXPECT_EQ(r.exit_code, 0) << ::testing::PrintToString(args) << r.Describe();
    EXPECT_EQ(r.err, "") << ::testing::PrintToString(args);
    return r.out;
  }

  nlohmann::json OkJson(const std::vector<std::string>& args) {
    const std::string out = Ok(args);
    nlohmann::json j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << ::testing::PrintToString(args) << " wrote no JSON:\n" << out;
    return j;
  }

  ServerProcess server_;
};

// Every member of `subset` is in `full` with the same value and the same JSON type, recursively (etcdctl
// leaves zero fields out; revkv writes them all).
void ExpectContains(const nlohmann::json& full, const nlohmann::json& subset, const std::string& path = "") {
  ASSERT_EQ(full.type_name(), subset.type_name()) << path << ": " << full << " vs " << subset;
  if (subset.is_object()) {
    for (const auto& [key, value] : subset.items()) {
      ASSERT_TRUE(full.contains(key)) << path << "." << key << " is missing from " << full;
      ExpectContains(full[key], value, path + "." + key);
    }
  } else if (subset.is_array()) {
    ASSERT_EQ(full.size(), subset.size()) << path;
    for (size_t i = 0; i < subset.size(); ++i)
      ExpectContains(full[i], subset[i], path + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(full, subset) << path;
  }
}

// Calls `visit(path, value)` for every value in `j`, recursively.
void Walk(const nlohmann::json& j, const std::string& path,
          const std::function<void(const std::string&, const std::string&, const nlohmann::json&)>& visit) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      visit(path, key, value);
      Walk(value, path + "." + key, visit);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) Walk(j[i], path + "[" + std::to_string(i) + "]", visit);
  }
}

// revkv's JSON style: names in snake_case, integers as numbers (never a string of digits).
void ExpectRevkvJsonStyle(const nlohmann::json& j, const std::string& what) {
  int numbers = 0;
  Walk(j, what, [&](const std::string& path, const std::string& key, const nlohmann::json& value) {
    for (char c : key) {
      EXPECT_FALSE(std::isupper(static_cast<unsigned char>(c))) << path << "." << key << " is not snake_case";
    }
    if (value.is_string()) {
      const std::string s = value.get<std::string>();
      const bool digits = !s.empty() && s.find_first_not_of("0123456789-") == std::string::npos;
      EXPECT_FALSE(digits) << path << "." << key << " is the string \"" << s << "\", not a number";
    }
    if (value.is_number_integer()) ++numbers;
  });
  EXPECT_GT(numbers, 0) << what << " has no integer at all";
}

TEST_F(CliOutput, GetTakesAPrefixARangeOrFromKeyAndPrintsWhatEtcdctlPrints) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  const std::vector<std::vector<std::string>> queries = {
      {"get", "--prefix", "dir/"},
      {"get", "dir/a", "dir/c"},
      {"get", "--from-key", "dir/b"},
      {"get", "--prefix", "dir/", "--keys-only"},
      {"get", "--prefix", "", "--limit", "2"},
      {"get", "--prefix", "nothing/"},
      {"get", "dir/b"},
  };
  for (const std::vector<std::string>& q : queries) {
    const CommandResult etcdctl = Etcdctl(server_, q);
    ASSERT_EQ(etcdctl.exit_code, 0) << ::testing::PrintToString(q) << etcdctl.Describe();
    if (q.size() == 2) {
      // One key: revkv's simple format prints the value alone (a documented departure); the pairs of
      // etcdctl's are the key and the value.
      EXPECT_EQ(Ok(q), "two words\n");
      EXPECT_EQ(etcdctl.out, "dir/b\ntwo words\n");
      continue;
    }
    if (q.back() == "--keys-only") {
      // etcdctl writes each key followed by its (empty) value line; revkv the keys alone (a documented
      // departure). The keys are the same.
      std::string keys = etcdctl.out;
      for (size_t at; (at = keys.find("\n\n")) != std::string::npos;) keys.erase(at, 1);
      EXPECT_EQ(Ok(q), keys);
      continue;
    }
    EXPECT_EQ(Ok(q), etcdctl.out) << ::testing::PrintToString(q);
  }
  EXPECT_EQ(Ok({"get", "--prefix", "dir/"}), "dir/a\n1\ndir/b\ntwo words\n");
  EXPECT_EQ(Ok({"get", "--prefix", "dir/", "--count-only"}), "2\n");
  // An absent single key still exits 3; an empty range is no error, as etcdctl's.
  EXPECT_EQ(Revkv({"get", "dir/zzz"}).exit_code, 3);
  EXPECT_EQ(Revkv({"get", "--prefix", "nothing/"}).exit_code, 0);
}

TEST_F(CliOutput, WriteOutJsonHasEtcdctlsFieldsAndNumbers) {
  REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
  for (const std::vector<std::string>& q : std::vector<std::vector<std::string>>{
           {"get", "--prefix", "dir/"}, {"get", "other"}, {"get", "--from-key", "a"}}) {
    std::vector<std::string> w = {"-w", "json"};
    w.insert(w.end(), q.begin(), q.end());
    const nlohmann::json revkv = OkJson(w);
    const CommandResult etcdctl = Etcdctl(server_, w);
    ASSERT_EQ(etcdctl.exit_code, 0) << etcdctl.Describe();
    const nlohmann::json etcd = ParseJson(etcdctl.out);
    ASSERT_FALSE(etcd.is_discarded()) << etcdctl.out;
    // Every field etcdctl writes, revkv writes with the same value and type: revisions, versions and
    // the header's ids as numbers, keys and values in base64.
    ExpectContains(revkv, etcd);
    EXPECT_TRUE(revkv["header"]["revision"].is_number_integer()) << revkv;
    EXPECT_TRUE(revkv["count"].is_number_integer()) << revkv;
    // --json is -w json.
    std::vector<std::string> j = {"--json"};
    j.insert(j.end(), q.begin(), q.end());
    EXPECT_EQ(OkJson(j), revkv);
  }
  const nlohmann::json put = OkJson({"put", "k", "v", "-w", "json"});
  EXPECT_TRUE(put["header"]["revision"].is_number_integer()) << put;
  EXPECT_EQ(put["header"]["revision"], 5);
}

TEST_F(CliOutput, WriteOutTableDrawsEtcdctlsBoxesAndSimpleIsTheDefault) {
  EXPECT_EQ(Ok({"-w", "table", "get", "--prefix", "dir/"}),
            "+-------+-----------+-----------------+--------------+---------+-------+\n"
            "|  KEY  |   VALUE   | CREATE_REVISION | MOD_REVISION | VERSION | LEASE |\n"
            "+-------+-----------+-----------------+--------------+---------+-------+\n"
            "| dir/a | 1         |               2 |            2 |       1 |       |\n"
            "| dir/b | two words |               3 |            3 |       1 |       |\n"
            "+-------+-----------+-----------------+--------------+---------+-------+\n");
  EXPECT_EQ(Ok({"range", "--prefix", "dir/", "--count-only", "--write-out=table"}),
            "+-------+\n"
            "| COUNT |\n"
            "+-------+\n"
            "|     2 |\n"
            "+-------+\n");
  const std::string status = Ok({"status", "-w", "table"});
  EXPECT_EQ(status.rfind("+---", 0), 0u) << status;
  EXPECT_NE(status.find(" ENDPOINT "), std::string::npos) << status;
  EXPECT_NE(status.find("| RAFT APPLIED INDEX | ERRORS |"), std::string::npos) << status;
  EXPECT_NE(status.find("| " + server_.address() + " |"), std::string::npos) << status;
  EXPECT_NE(status.find("3.4.0+revkv."), std::string::npos) << status;

  EXPECT_EQ(Ok({"-w", "simple", "get", "--prefix", "dir/"}), Ok({"get", "--prefix", "dir/"}));
  EXPECT_EQ(Ok({"-w", "simple", "get", "other"}), "3\n");

  // Mistakes: a command without a table, an unknown format, two formats at once. Nothing is sent.
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"-w", "table", "put", "x", "y"},
            "revkv: -w table is not supported by put (get, range and status write tables; use simple or "
            "json)\n"},
           {{"-w", "yaml", "get", "x"},
            "revkv: -w/--write-out: unknown output format \"yaml\" (use simple, json or table)\n"},
           {{"--json", "-w", "table", "get", "x"},
            "revkv: --json and -w table ask for two output formats: give one\n"}}) {
    const CommandResult r = Revkv(args);
    EXPECT_EQ(r.exit_code, 2) << r.Describe();
    EXPECT_EQ(r.err, message);
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(Revkv({"get", "x"}).exit_code, 3);  // the refused put did not happen
}

TEST_F(CliOutput, OneJsonStyleAcrossTheCliGcWatchAndDebugGc) {
  const nlohmann::json cli = OkJson({"gc", "stats", "-w", "json"});
  const HttpResponse http = HttpGet(server_.metrics_port(), "/debug/gc");
  ASSERT_EQ(http.status, 200) << http.error;
  const nlohmann::json debug_gc = nlohmann::json::parse(http.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(debug_gc.is_discarded()) << http.body;
  ExpectRevkvJsonStyle(cli, "revkv gc stats -w json");
  ExpectRevkvJsonStyle(debug_gc, "/debug/gc");
  ExpectRevkvJsonStyle(OkJson({"-w", "json", "get", "--prefix", "dir/"}), "revkv -w json get");
  // The same message, the same names and types (the figures move between the two reads).
  ASSERT_EQ(cli.size(), debug_gc.size()) << cli << "\n" << debug_gc;
  for (const auto& [key, value] : cli.items()) {
    ASSERT_TRUE(debug_gc.contains(key)) << key;
    EXPECT_EQ(debug_gc[key].type_name(), value.type_name()) << key;
  }
  EXPECT_TRUE(debug_gc["heap"]["max_bytes"].is_number_unsigned()) << debug_gc["heap"];
  EXPECT_EQ(debug_gc["heap"]["max_bytes"], cli["heap"]["max_bytes"]);
  EXPECT_EQ(debug_gc["store"]["keys"], 3);

  // gc watch --json: one line, the same style.
  const CommandResult watch = Revkv({"gc", "watch", "--json", "--count", "1", "--interval", "100ms"});
  if (watch.exit_code == 0) {
    const nlohmann::json line =
        nlohmann::json::parse(watch.out.substr(0, watch.out.find('\n')), nullptr, false);
    ASSERT_FALSE(line.is_discarded()) << watch.out;
    ExpectRevkvJsonStyle(line, "revkv gc watch --json");
  } else {
    ADD_FAILURE() << watch.Describe();
  }
}

}  // namespace
}  // namespace revkv::integration
