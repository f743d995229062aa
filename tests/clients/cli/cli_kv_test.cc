// revkv get, put, del, range and compact against a real server: text output, --json output, exit
// statuses.
#include <gtest/gtest.h>

#include "tests/clients/cli/cli_fixture.h"

namespace revkv::client::testing {
namespace {

class CliKv : public CliTest {
 protected:
  // Puts dir/a=1, dir/b=2, dir/c=3 and other=4 (revisions 2 to 5).
  void PutFourKeys() {
    for (const auto& [key, value] :
         {std::pair{"dir/a", "1"}, {"dir/b", "2"}, {"dir/c", "3"}, {"other", "4"}}) {
      ASSERT_EQ(Ok({"put", key, value}), "OK\n");
    }
  }
};

TEST_F(CliKv, PutPrintsOkAndGetPrintsTheValue) {
  EXPECT_EQ(Ok({"put", "greeting", "hello world"}), "OK\n");
  EXPECT_EQ(Ok({"get", "greeting"}), "hello world\n");
  // Flags of the whole command line may come after the subcommand.
  EXPECT_EQ(Ok({"put", "greeting", "hi", "--prev-kv"}), "OK\ngreeting\nhello world\n");
}

TEST_F(CliKv, PutWithDashReadsTheValueFromStandardInputAsItIs) {
  EXPECT_EQ(Ok({"put", "k", "-"}, "two\nlines\n"), "OK\n");
  EXPECT_EQ(Ok({"get", "k"}), "two\nlines\n\n");
}

TEST_F(CliKv, GetOfAnAbsentKeyExitsThreeAndSaysSo) {
  const CommandResult r = Cli({"get", "missing"});
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "revkv: key \"missing\" not found\n");
}

TEST_F(CliKv, GetAtAnEarlierRevisionSeesTheEarlierValue) {
  Ok({"put", "k", "first"});  // revision 2
  Ok({"put", "k", "second"});
  EXPECT_EQ(Ok({"get", "k", "--rev", "2"}), "first\n");
  EXPECT_EQ(Ok({"get", "k"}), "second\n");
}

TEST_F(CliKv, RangePrintsKeysAndValuesInKeyOrder) {
  PutFourKeys();
  EXPECT_EQ(Ok({"range", "--prefix", "dir/"}), "dir/a\n1\ndir/b\n2\ndir/c\n3\n");
  EXPECT_EQ(Ok({"range", "dir/a", "dir/c"}), "dir/a\n1\ndir/b\n2\n");
  EXPECT_EQ(Ok({"range", "--from-key", "dir/c"}), "dir/c\n3\nother\n4\n");
  EXPECT_EQ(Ok({"range", "other"}), "other\n4\n");
  EXPECT_EQ(Ok({"range", "--prefix", ""}), "dir/a\n1\ndir/b\n2\ndir/c\n3\nother\n4\n");
}

TEST_F(CliKv, RangeFlagsLimitSortAndTrimTheOutput) {
  PutFourKeys();
  EXPECT_EQ(Ok({"range", "--prefix", "dir/", "--keys-only"}), "dir/a\ndir/b\ndir/c\n");
  EXPECT_EQ(Ok({"range", "--prefix", "dir/", "--count-only"}), "3\n");
  EXPECT_EQ(Ok({"range", "--prefix", "dir/", "--limit", "2", "--keys-only"}), "dir/a\ndir/b\n");
  EXPECT_EQ(Ok({"range", "--prefix", "", "--sort-by", "value", "--order", "descend", "--keys-only"}),
            "other\ndir/c\ndir/b\ndir/a\n");
  EXPECT_EQ(Ok({"range", "--prefix", "", "--sort-by", "MODIFY", "--order", "DESCEND", "--limit", "1"}),
            "other\n4\n");
  EXPECT_EQ(Ok({"range", "--prefix", "dir/", "--rev", "3", "--keys-only"}), "dir/a\ndir/b\n");
}

TEST_F(CliKv, DelPrintsHowManyAndThePreviousPairs) {
  PutFourKeys();
  EXPECT_EQ(Ok({"del", "other"}), "1\n");
  EXPECT_EQ(Ok({"del", "other"}), "0\n");
  EXPECT_EQ(Ok({"del", "--prefix", "dir/", "--prev-kv"}), "3\ndir/a\n1\ndir/b\n2\ndir/c\n3\n");
  EXPECT_EQ(Ok({"range", "--prefix", "", "--count-only"}), "0\n");
}

TEST_F(CliKv, DelOfARangeEndsBeforeItsEnd) {
  PutFourKeys();
  EXPECT_EQ(Ok({"del", "dir/a", "dir/c"}), "2\n");
  EXPECT_EQ(Ok({"range", "--prefix", "", "--keys-only"}), "dir/c\nother\n");
}

TEST_F(CliKv, CompactDiscardsTheHistoryBeforeTheRevision) {
  PutFourKeys();
  EXPECT_EQ(Ok({"compact", "4"}), "compacted revision 4\n");
  const CommandResult old = Cli({"range", "dir/a", "--rev", "3"});
  EXPECT_EQ(old.exit_code, 1) << old.Describe();
  EXPECT_EQ(old.err, "revkv: etcdserver: mvcc: required revision has been compacted\n");
  EXPECT_EQ(Ok({"range", "--prefix", "dir/", "--rev", "4", "--keys-only"}), "dir/a\ndir/b\ndir/c\n");
}

TEST_F(CliKv, JsonOfRangeIsTheResponseWithBase64KeysAndEveryField) {
  Ok({"put", "foo", "bar"});
  const nlohmann::json range = Json({"range", "foo"});
  ASSERT_TRUE(range.is_object()) << range;
  EXPECT_EQ(JsonInt(range["header"]["revision"]), 2);
  EXPECT_TRUE(range["header"].contains("cluster_id"));
  EXPECT_TRUE(range["header"].contains("member_id"));
  ASSERT_EQ(range["kvs"].size(), 1u) << range;
  const nlohmann::json& kv = range["kvs"][0];
  EXPECT_EQ(kv["key"], "Zm9v");    // base64("foo")
  EXPECT_EQ(kv["value"], "YmFy");  // base64("bar")
  EXPECT_EQ(JsonInt(kv["create_revision"]), 2);
  EXPECT_EQ(JsonInt(kv["mod_revision"]), 2);
  EXPECT_EQ(JsonInt(kv["version"]), 1);
  EXPECT_EQ(JsonInt(kv["lease"]), 0);  // zero values are written too
  EXPECT_EQ(range["more"], false);
  EXPECT_EQ(JsonInt(range["count"]), 1);

  // An absent key: the response (count 0, no kvs) and exit status 3.
  const CommandResult missing = Cli({"--json", "get", "nope"});
  EXPECT_EQ(missing.exit_code, 3);
  const nlohmann::json empty = nlohmann::json::parse(missing.out);
  EXPECT_EQ(JsonInt(empty["count"]), 0);
  EXPECT_TRUE(empty["kvs"].empty());
}

TEST_F(CliKv, JsonOfPutDelAndCompactIsTheirResponse) {
  const nlohmann::json put = Json({"put", "k", "v"});
  EXPECT_EQ(JsonInt(put["header"]["revision"]), 2);
  const nlohmann::json put_again = Json({"put", "k", "w", "--prev-kv"});
  EXPECT_EQ(put_again["prev_kv"]["value"], "dg==");  // base64("v")
  const nlohmann::json del = Json({"del", "k", "--prev-kv"});
  EXPECT_EQ(JsonInt(del["deleted"]), 1);
  ASSERT_EQ(del["prev_kvs"].size(), 1u);
  EXPECT_EQ(del["prev_kvs"][0]["key"], "aw==");  // base64("k")
  const nlohmann::json compact = Json({"compact", "3"});
  EXPECT_EQ(JsonInt(compact["header"]["revision"]), 4);
}

}  // namespace
}  // namespace revkv::client::testing
