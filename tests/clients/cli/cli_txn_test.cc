// revkv txn against a real server: compares and operations from --if/--then/--else and from a file or
// standard input; the branch that ran, its responses, the JSON, and refused transaction text.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/clients/cli/cli_fixture.h"

namespace revkv::client::testing {
namespace {

using CliTxn = CliTest;

TEST_F(CliTxn, HoldingComparesRunTheThenOperations) {
  Ok({"put", "k", "v"});  // revision 2
  EXPECT_EQ(Ok({"txn", "--if", "mod(k) = 2", "--if", R"(value("k") = "v")", "--then", "put k w", "--then",
                "get k", "--else", "get k"}),
            "SUCCESS\n\nOK\n\nk\nw\n");
  EXPECT_EQ(Ok({"get", "k"}), "w\n");
}

TEST_F(CliTxn, AFailedCompareRunsTheElseOperationsAndStillExitsZero) {
  Ok({"put", "k", "v"});
  EXPECT_EQ(Ok({"txn", "--if", "version(k) > 1", "--then", "del k", "--else", "get --keys-only k", "--else",
                "put j 1"}),
            "FAILURE\n\nk\n\nOK\n");
  EXPECT_EQ(Ok({"get", "k"}), "v\n");
  EXPECT_EQ(Ok({"get", "j"}), "1\n");
}

TEST_F(CliTxn, ReadsTheThreeSectionFormatFromStandardInput) {
  Ok({"put", "a", "10"});
  Ok({"put", "b", "0"});
  const std::string text =
      "# move a to b when nobody changed a\n"
      "mod(\"a\") = 2\n"
      "\n"
      "put a 0\n"
      "put b \"10\"\n"
      "\n"
      "get a\n";
  EXPECT_EQ(Ok({"txn", "--file", "-"}, text), "SUCCESS\n\nOK\n\nOK\n");
  EXPECT_EQ(Ok({"range", "a", "c"}), "a\n0\nb\n10\n");
  // The same text again: a has changed since revision 2, so the failure branch runs.
  EXPECT_EQ(Ok({"txn", "--file", "-"}, text), "FAILURE\n\na\n0\n");
}

TEST_F(CliTxn, ReadsAFile) {
  const std::string path = server_.scratch_dir() + "/txn.txt";
  std::ofstream(path) << "\nput k 'from a file'\ndel --prev-kv nothing\n";
  EXPECT_EQ(Ok({"txn", "--file", path}), "SUCCESS\n\nOK\n\n0\n");
  EXPECT_EQ(Ok({"get", "k"}), "from a file\n");
}

TEST_F(CliTxn, JsonIsTheTxnResponse) {
  Ok({"put", "k", "v"});
  const nlohmann::json txn = Json({"txn", "--if", "create(k) > 0", "--then", "get k", "--then", "del k"});
  EXPECT_EQ(txn["succeeded"], true);
  ASSERT_EQ(txn["responses"].size(), 2u) << txn;
  EXPECT_EQ(txn["responses"][0]["response_range"]["kvs"][0]["value"], "dg==");  // base64("v")
  EXPECT_EQ(JsonInt(txn["responses"][1]["response_delete_range"]["deleted"]), 1);
  EXPECT_EQ(JsonInt(txn["header"]["revision"]), 3);
}

TEST_F(CliTxn, BadTransactionTextIsAUsageErrorNamingThePlace) {
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"txn", "--if", "mod(k) >= 2", "--then", "put k v"},
            "revkv: txn: --if 1: etcd compares have no >="},
           {{"txn", "--then", "put k v", "--then", "frob k"},
            "revkv: txn: --then 2: unknown operation \"frob\""},
           {{"txn"}, "revkv: txn: give --if/--then/--else, or --file"},
           {{"txn", "--file", "-", "--then", "put k v"},
            "revkv: txn: give either --file or --if/--then/--else"},
           {{"txn", "--file", "/nonexistent/txn"}, "revkv: txn: cannot read /nonexistent/txn"}}) {
    const CommandResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << Describe(args) << r.Describe();
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << Describe(args) << r.Describe();
  }
  const CommandResult from_stdin = Cli({"txn", "--file", "-"}, "mod(k) = 1\n\nput k\n");
  EXPECT_EQ(from_stdin.exit_code, 2) << from_stdin.Describe();
  EXPECT_EQ(from_stdin.err, "revkv: txn: line 3: put takes a key and a value: put KEY VALUE\n");
}

TEST_F(CliTxn, AnEtcdErrorFromTheTxnExitsOne) {
  // etcd refuses two writes to one key in one txn.
  const CommandResult r = Cli({"txn", "--then", "put k 1", "--then", "put k 2"});
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_EQ(r.err, "revkv: etcdserver: duplicate key given in txn request\n");
}

}  // namespace
}  // namespace revkv::client::testing
