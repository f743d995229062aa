// Real etcd tooling against a real revkv-server: Debian's etcdctl 3.4, unchanged, puts, gets (single,
// --prefix, --from-key, --limit, --rev), deletes, runs interactive txns, compacts, and reports endpoint
// health, endpoint status and the member list. Outputs are read with -w json where etcdctl has it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/integration/etcdctl_support.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

class EtcdctlAgainstRevkv : public ::testing::Test {
 protected:
  void SetUp() override {
    REVKV_NEED_TOOL(kEtcdctl, "etcd-client");
    ASSERT_TRUE(server_.Start());
  }

  // Runs etcdctl and expects exit code 0; returns its stdout.
  std::string Run(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    const CommandResult r = Etcdctl(server_, args, stdin_text);
    EXPECT_EQ(r.exit_code, 0) << "etcdctl " << ::testing::PrintToString(args) << ": " << r.Describe();
    return r.out;
  }
  nlohmann::json RunJson(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.push_back("-w");
    args.push_back("json");
    const std::string out = Run(args, stdin_text);
    nlohmann::json j = ParseJson(out);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << out;
    return j.is_discarded() ? nlohmann::json::object() : j;  // so that a failed run fails checks, not throws
  }

  ServerProcess server_;
};

TEST_F(EtcdctlAgainstRevkv, PutThenGetOneKey) {
  EXPECT_EQ(Run({"put", "foo", "bar"}), "OK\n");
  EXPECT_EQ(Run({"get", "foo"}), "foo\nbar\n");
  const nlohmann::json j = RunJson({"get", "foo"});
  ASSERT_TRUE(j.contains("kvs")) << j.dump();
  EXPECT_EQ(j["header"]["revision"], 2);
  EXPECT_NE(j["header"].value("cluster_id", uint64_t{0}), 0u);
  EXPECT_NE(j["header"].value("member_id", uint64_t{0}), 0u);
  EXPECT_EQ(j["count"], 1);
  ASSERT_EQ(j["kvs"].size(), 1u);
  EXPECT_EQ(Base64(j["kvs"][0]["key"]), "foo");
  EXPECT_EQ(Base64(j["kvs"][0]["value"]), "bar");
  EXPECT_EQ(j["kvs"][0]["create_revision"], 2);
  EXPECT_EQ(j["kvs"][0]["mod_revision"], 2);
  EXPECT_EQ(j["kvs"][0]["version"], 1);
  EXPECT_EQ(Run({"get", "missing"}), "");
}

TEST_F(EtcdctlAgainstRevkv, GetByPrefixFromKeyWithLimitAndAtARevision) {
  for (const char* key : {"a/1", "a/2", "a/3", "b/1"})
    Run({"put", key, std::string("old-") + key});  // r2..r5
  Run({"put", "a/1", "new"});                      // r6

  const nlohmann::json prefix = RunJson({"get", "a/", "--prefix"});
  EXPECT_EQ(JsonKeys(prefix), (std::vector<std::string>{"a/1", "a/2", "a/3"}));
  EXPECT_EQ(prefix["count"], 3);

  const nlohmann::json from_key = RunJson({"get", "a/2", "--from-key"});
  EXPECT_EQ(JsonKeys(from_key), (std::vector<std::string>{"a/2", "a/3", "b/1"}));

  const nlohmann::json limited = RunJson({"get", "a/", "--prefix", "--limit=2"});
  EXPECT_EQ(JsonKeys(limited), (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_EQ(limited.value("more", false), true);
  EXPECT_EQ(limited["count"], 3);

  const nlohmann::json old = RunJson({"get", "a/1", "--rev=2"});
  ASSERT_EQ(old["kvs"].size(), 1u);
  EXPECT_EQ(Base64(old["kvs"][0]["value"]), "old-a/1");
  EXPECT_EQ(old["header"]["revision"], 6);  // the current revision
  EXPECT_EQ(Run({"get", "a/1", "--rev=6", "--print-value-only"}), "new\n");
  EXPECT_EQ(Run({"get", "b/1", "--rev=4"}), "");  // not yet written at revision 4

  const nlohmann::json sorted = RunJson({"get", "a/", "--prefix", "--sort-by=MODIFY", "--order=DESCEND"});
  EXPECT_EQ(JsonKeys(sorted), (std::vector<std::string>{"a/1", "a/3", "a/2"}));
  EXPECT_EQ(Run({"get", "a/", "--prefix", "--keys-only"}), "a/1\n\na/2\n\na/3\n\n");
  const nlohmann::json all = RunJson({"get", "", "--from-key", "--keys-only"});  // "" from-key: every key
  EXPECT_EQ(JsonKeys(all), (std::vector<std::string>{"a/1", "a/2", "a/3", "b/1"}));
  EXPECT_EQ(all["count"], 4);
  for (const auto& kv : all["kvs"]) EXPECT_FALSE(kv.contains("value")) << kv.dump();
}

TEST_F(EtcdctlAgainstRevkv, DelPrintsTheDeletedCount) {
  for (const char* key : {"a/1", "a/2", "a/3", "b"}) Run({"put", key, "v"});
  EXPECT_EQ(Run({"del", "a/1"}), "1\n");
  EXPECT_EQ(Run({"del", "a/", "--prefix"}), "2\n");
  EXPECT_EQ(Run({"del", "missing"}), "0\n");
  EXPECT_EQ(Run({"del", "b", "--prev-kv"}), "1\nb\nv\n");
  EXPECT_EQ(Run({"get", "", "--from-key"}), "");
}

TEST_F(EtcdctlAgainstRevkv, TxnFromStdinRunsTheBranchItsComparesChoose) {
  Run({"put", "k", "v1"});  // r2
  // Interactive txn: compares, success ops, failure ops, each section ended by a blank line.
  EXPECT_EQ(Run({"txn", "-i"},
                "value(\"k\") = \"v1\"\nver(\"k\") = \"1\"\nmod(\"k\") = \"2\"\ncreate(\"k\") = \"2\"\n\n"
                "put k v2\nget k\n\nput k other\n\n"),
            "compares:\nsuccess requests (get, put, del):\nfailure requests (get, put, del):\n"
            "SUCCESS\n\nOK\n\nk\nv2\n");

  const nlohmann::json failed =
      RunJson({"txn", "-i"}, "value(\"k\") = \"v1\"\n\nput k never\n\nput f else\nget k\n\n");
  EXPECT_EQ(failed.value("succeeded", false), false) << failed.dump();
  EXPECT_EQ(failed["header"]["revision"], 4);
  ASSERT_EQ(failed["responses"].size(), 2u) << failed.dump();
  EXPECT_EQ(Run({"get", "f", "--print-value-only"}), "else\n");
  EXPECT_EQ(Run({"get", "k", "--print-value-only"}), "v2\n");

  const nlohmann::json ok = RunJson({"txn", "-i"}, "ver(\"k\") > \"1\"\n\ndel k\n\n\n");
  EXPECT_EQ(ok.value("succeeded", false), true) << ok.dump();
  EXPECT_EQ(Run({"get", "k"}), "");
}

TEST_F(EtcdctlAgainstRevkv, CompactionMakesOldRevisionsUnreadable) {
  for (int i = 1; i <= 4; ++i) Run({"put", "k", "v" + std::to_string(i)});  // r2..r5
  EXPECT_EQ(Run({"compaction", "4"}), "compacted revision 4\n");
  const CommandResult compacted = Etcdctl(server_, {"get", "k", "--rev=3"});
  EXPECT_EQ(compacted.exit_code, 1) << compacted.Describe();
  EXPECT_NE(compacted.err.find("Error: etcdserver: mvcc: required revision has been compacted"),
            std::string::npos)
      << compacted.err;
  const CommandResult future = Etcdctl(server_, {"get", "k", "--rev=100"});
  EXPECT_EQ(future.exit_code, 1) << future.Describe();
  EXPECT_NE(future.err.find("Error: etcdserver: mvcc: required revision is a future revision"),
            std::string::npos)
      << future.err;
  EXPECT_EQ(Run({"get", "k", "--rev=4", "--print-value-only"}), "v3\n");
}

TEST_F(EtcdctlAgainstRevkv, EndpointHealthStatusAndMemberListDescribeTheServer) {
  Run({"put", "k", "v"});
  const nlohmann::json health = RunJson({"endpoint", "health"});
  ASSERT_TRUE(health.is_array() && health.size() == 1) << health.dump();
  EXPECT_EQ(health[0]["endpoint"], server_.address());
  EXPECT_EQ(health[0]["health"], true);
  const CommandResult plain = Etcdctl(server_, {"endpoint", "health"});  // etcdctl reports it on stderr
  EXPECT_EQ(plain.exit_code, 0) << plain.Describe();
  EXPECT_NE(plain.err.find(server_.address() + " is healthy: successfully committed proposal"),
            std::string::npos)
      << plain.Describe();

  const nlohmann::json status = RunJson({"endpoint", "status"});
  ASSERT_TRUE(status.is_array() && status.size() == 1) << status.dump();
  const nlohmann::json& s = status[0]["Status"];
  EXPECT_EQ(status[0]["Endpoint"], server_.address());
  EXPECT_EQ(s["version"].get<std::string>().substr(0, 4), "3.4.") << s.dump();
  EXPECT_EQ(s["header"]["revision"], 2);
  const uint64_t member_id = s["header"].value("member_id", uint64_t{0});
  EXPECT_NE(member_id, 0u);
  EXPECT_EQ(s.value("leader", uint64_t{0}), member_id);
  EXPECT_GT(s.value("dbSize", int64_t{0}), 0);

  const nlohmann::json members = RunJson({"member", "list"});
  ASSERT_EQ(members["members"].size(), 1u) << members.dump();
  const nlohmann::json& m = members["members"][0];
  EXPECT_EQ(m.value("ID", uint64_t{0}), member_id);
  EXPECT_EQ(m["name"], "default");
  EXPECT_EQ(m["clientURLs"], nlohmann::json::array({"http://" + server_.address()}));
  const std::string table = Run({"member", "list"});
  EXPECT_NE(table.find(", started, default, "), std::string::npos) << table;
}

}  // namespace
}  // namespace revkv::integration
