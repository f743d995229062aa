// The txn grammar (clients/cli/txn_grammar.h): compares, operations and the three-section file format,
// including the messages of what it refuses.
#include "clients/cli/txn_grammar.h"

#include <gtest/gtest.h>

namespace revkv::client {
namespace {

using etcdserverpb::Compare;

TEST(ParseCompare, ReadsEtcdctlsQuotedForm) {
  absl::StatusOr<Compare> c = ParseCompare(R"(value("k 1") = "v 1")");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target(), Compare::VALUE);
  EXPECT_EQ(c->result(), Compare::EQUAL);
  EXPECT_EQ(c->key(), "k 1");
  EXPECT_EQ(c->value(), "v 1");
}

TEST(ParseCompare, ReadsBareWordsAndEveryTargetAndOperator) {
  struct Case {
    const char* text;
    Compare::CompareTarget target;
    Compare::CompareResult result;
    int64_t number;
  };
  for (const Case& t :
       {Case{"mod(k) > 5", Compare::MOD, Compare::GREATER, 5}, Case{"m(k)<5", Compare::MOD, Compare::LESS, 5},
        Case{"create(k) != 0", Compare::CREATE, Compare::NOT_EQUAL, 0},
        Case{"c(k) == 7", Compare::CREATE, Compare::EQUAL, 7},
        Case{"version(k) = 2", Compare::VERSION, Compare::EQUAL, 2},
        Case{"ver(k) > 1", Compare::VERSION, Compare::GREATER, 1},
        Case{"lease(k) = 0", Compare::LEASE, Compare::EQUAL, 0}}) {
    absl::StatusOr<Compare> c = ParseCompare(t.text);
    ASSERT_TRUE(c.ok()) << t.text << ": " << c.status();
    EXPECT_EQ(c->key(), "k") << t.text;
    EXPECT_EQ(c->target(), t.target) << t.text;
    EXPECT_EQ(c->result(), t.result) << t.text;
    switch (t.target) {
      case Compare::MOD:
        EXPECT_EQ(c->mod_revision(), t.number) << t.text;
        break;
      case Compare::CREATE:
        EXPECT_EQ(c->create_revision(), t.number) << t.text;
        break;
      case Compare::VERSION:
        EXPECT_EQ(c->version(), t.number) << t.text;
        break;
      case Compare::LEASE:
        EXPECT_EQ(c->lease(), t.number) << t.text;
        break;
      default:
        break;
    }
  }
}

TEST(ParseCompare, DecodesEscapesAndSingleQuotes) {
  absl::StatusOr<Compare> c = ParseCompare(R"(v("a\"b\x41\n") = 'it''s')");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->key(), "a\"bA\n");
  EXPECT_EQ(c->value(), "its");  // two single-quoted pieces, concatenated as a shell would
}

TEST(ParseCompare, ExplainsWhatIsWrong) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& t :
       {Case{"frob(k) = 1", "unknown compare target \"frob\""}, Case{"mod k = 1", "expected '(' after mod"},
        Case{"mod() = 1", "mod() needs a key"}, Case{"mod(k = 1", "expected ')'"},
        Case{"mod(k) >= 1", "no >= or <="}, Case{"mod(k) ~ 1", "expected = != < or >"},
        Case{"mod(k) =", "no right-hand side"}, Case{"mod(k) = x", "compares with an integer"},
        Case{"mod(k) = \"1\"", "compares with an integer"}, Case{"value(k) = \"v", "unterminated string"},
        Case{"value(k) = \"\\q\"", "unknown escape \\q"}, Case{"value(k) = v extra", "unexpected \"extra\""},
        Case{"", "expected a compare"}}) {
    absl::StatusOr<Compare> c = ParseCompare(t.text);
    ASSERT_FALSE(c.ok()) << t.text;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << t.text;
    EXPECT_NE(c.status().message().find(t.message), absl::string_view::npos)
        << t.text << " -> " << c.status().message();
  }
}

TEST(ParseRequestOp, ReadsPutGetAndDelWithFlags) {
  absl::StatusOr<etcdserverpb::RequestOp> put = ParseRequestOp("put --prev-kv k 'a value'");
  ASSERT_TRUE(put.ok()) << put.status();
  ASSERT_TRUE(put->has_request_put());
  EXPECT_EQ(put->request_put().key(), "k");
  EXPECT_EQ(put->request_put().value(), "a value");
  EXPECT_TRUE(put->request_put().prev_kv());

  absl::StatusOr<etcdserverpb::RequestOp> get =
      ParseRequestOp("get --prefix --limit 3 dir/ --rev=9 --keys-only");
  ASSERT_TRUE(get.ok()) << get.status();
  ASSERT_TRUE(get->has_request_range());
  EXPECT_EQ(get->request_range().key(), "dir/");
  EXPECT_EQ(get->request_range().range_end(), "dir0");
  EXPECT_EQ(get->request_range().limit(), 3);
  EXPECT_EQ(get->request_range().revision(), 9);
  EXPECT_TRUE(get->request_range().keys_only());

  absl::StatusOr<etcdserverpb::RequestOp> range = ParseRequestOp("range a c");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->request_range().key(), "a");
  EXPECT_EQ(range->request_range().range_end(), "c");

  absl::StatusOr<etcdserverpb::RequestOp> del = ParseRequestOp("delete --from-key --prev-kv m");
  ASSERT_TRUE(del.ok()) << del.status();
  ASSERT_TRUE(del->has_request_delete_range());
  EXPECT_EQ(del->request_delete_range().key(), "m");
  EXPECT_EQ(del->request_delete_range().range_end(), std::string(1, '\0'));
  EXPECT_TRUE(del->request_delete_range().prev_kv());
}

TEST(ParseRequestOp, AQuotedWordIsNeverAFlag) {
  absl::StatusOr<etcdserverpb::RequestOp> put = ParseRequestOp(R"(put "--prefix" "--x")");
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->request_put().key(), "--prefix");
  EXPECT_EQ(put->request_put().value(), "--x");
}

TEST(ParseRequestOp, ExplainsWhatIsWrong) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& t :
       {Case{"", "empty operation"}, Case{"frob k", "unknown operation \"frob\""},
        Case{"put k", "put takes a key and a value"}, Case{"put k v w", "put takes a key and a value"},
        Case{"put --prefix k v", "put: unknown flag --prefix"}, Case{"get", "get takes a key"},
        Case{"get a b c", "get takes a key"}, Case{"get --prev-kv k", "get: unknown flag --prev-kv"},
        Case{"get --limit", "--limit needs a value"}, Case{"get --limit=-1 k", "non-negative integer"},
        Case{"del --keys-only k", "del: unknown flag --keys-only"},
        Case{"del --prefix a b", "only one of RANGE_END, --prefix and --from-key"}}) {
    absl::StatusOr<etcdserverpb::RequestOp> op = ParseRequestOp(t.text);
    ASSERT_FALSE(op.ok()) << t.text;
    EXPECT_NE(op.status().message().find(t.message), absl::string_view::npos)
        << t.text << " -> " << op.status().message();
  }
}

TEST(ParseTxnText, ReadsThreeSectionsSeparatedByBlankLines) {
  absl::StatusOr<etcdserverpb::TxnRequest> txn = ParseTxnText(
      "# transfer\n"
      "mod(\"a\") = 4\r\n"
      "value(\"b\") != \"x\"\n"
      "\n"
      "put a 1\n"
      "del b\n"
      "\n"
      "get a\n"
      "\n\n");
  ASSERT_TRUE(txn.ok()) << txn.status();
  EXPECT_EQ(txn->compare_size(), 2);
  ASSERT_EQ(txn->success_size(), 2);
  EXPECT_TRUE(txn->success(0).has_request_put());
  EXPECT_TRUE(txn->success(1).has_request_delete_range());
  ASSERT_EQ(txn->failure_size(), 1);
  EXPECT_TRUE(txn->failure(0).has_request_range());
}

TEST(ParseTxnText, ALeadingBlankLineMeansNoCompares) {
  absl::StatusOr<etcdserverpb::TxnRequest> txn = ParseTxnText("\nput k v\n");
  ASSERT_TRUE(txn.ok()) << txn.status();
  EXPECT_EQ(txn->compare_size(), 0);
  EXPECT_EQ(txn->success_size(), 1);
  EXPECT_EQ(txn->failure_size(), 0);
}

TEST(ParseTxnText, NamesTheLineOfAnError) {
  absl::StatusOr<etcdserverpb::TxnRequest> bad_op = ParseTxnText("mod(k) = 1\n\nput k\n");
  ASSERT_FALSE(bad_op.ok());
  EXPECT_NE(bad_op.status().message().find("line 3: put takes"), absl::string_view::npos) << bad_op.status();

  absl::StatusOr<etcdserverpb::TxnRequest> op_as_compare = ParseTxnText("put k v\n");
  ASSERT_FALSE(op_as_compare.ok());
  EXPECT_NE(op_as_compare.status().message().find("line 1:"), absl::string_view::npos);

  absl::StatusOr<etcdserverpb::TxnRequest> fourth = ParseTxnText("\nput k v\n\nget k\n\nget j\n");
  ASSERT_FALSE(fourth.ok());
  EXPECT_NE(fourth.status().message().find("line 6: text after the failure operations"),
            absl::string_view::npos)
      << fourth.status();
}

TEST(ParseTxnArguments, NamesTheFlagAndEntryOfAnError) {
  absl::StatusOr<etcdserverpb::TxnRequest> txn =
      ParseTxnArguments({"mod(k) = 1"}, {"put k v"}, {"get k", "nope"});
  ASSERT_FALSE(txn.ok());
  EXPECT_NE(txn.status().message().find("--else 2: unknown operation"), absl::string_view::npos)
      << txn.status();

  absl::StatusOr<etcdserverpb::TxnRequest> good = ParseTxnArguments({"mod(k) = 1"}, {"put k v"}, {"get k"});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->compare_size(), 1);
  EXPECT_EQ(good->success_size(), 1);
  EXPECT_EQ(good->failure_size(), 1);
}

}  // namespace
}  // namespace revkv::client
