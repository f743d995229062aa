// The workloads' operations: the requests they build and the transfer's steps.
#include "clients/bench/operation.h"

#include <gtest/gtest.h>

#include "clients/bench/balance.h"

namespace revkv::client {
namespace {

BenchOptions TransferOptions(SendMode mode) {
  BenchOptions options;
  options.workload = Workload::kTxn;
  options.mode = mode;
  options.keys = 2;  // so the transfer is between keys 0 and 1, in some order
  options.value_size = 20;
  options.max_retries = 2;
  return options;
}

etcdserverpb::RangeResponse Found(int64_t balance, int64_t mod_revision) {
  etcdserverpb::RangeResponse response;
  mvccpb::KeyValue* kv = response.add_kvs();
  EncodeBalance(balance, 20, kv->mutable_value());
  kv->set_mod_revision(mod_revision);
  return response;
}

TEST(Operation, TransferReadsBothKeysThenPutsBothGuardedByTheirRevisions) {
  const BenchOptions options = TransferOptions(SendMode::kUnary);
  absl::StatusOr<WorkloadSpec> spec = WorkloadSpec::Create(options);
  ASSERT_TRUE(spec.ok()) << spec.status();
  Operation op(&*spec);
  Rng rng(5);
  op.Begin(rng);
  ASSERT_EQ(op.rpc(), Rpc::kRange);
  const std::string from = op.range_request().key();
  EXPECT_TRUE(op.range_request().range_end().empty());

  Operation::Step step = op.OnRange(Found(100, 7), rng);
  ASSERT_EQ(step.kind, Operation::Step::kSend);
  ASSERT_EQ(op.rpc(), Rpc::kRange);
  const std::string to = op.range_request().key();
  EXPECT_NE(from, to);

  step = op.OnRange(etcdserverpb::RangeResponse(), rng);  // the destination does not exist yet
  ASSERT_EQ(step.kind, Operation::Step::kSend);
  ASSERT_EQ(op.rpc(), Rpc::kTxn);
  const etcdserverpb::TxnRequest& txn = op.txn_request();
  ASSERT_EQ(txn.compare_size(), 2);
  EXPECT_EQ(txn.compare(0).key(), from);
  EXPECT_EQ(txn.compare(0).target(), etcdserverpb::Compare::MOD);
  EXPECT_EQ(txn.compare(0).result(), etcdserverpb::Compare::EQUAL);
  EXPECT_EQ(txn.compare(0).mod_revision(), 7);
  EXPECT_EQ(txn.compare(1).key(), to);
  EXPECT_EQ(txn.compare(1).mod_revision(), 0);
  ASSERT_EQ(txn.success_size(), 2);
  EXPECT_EQ(txn.failure_size(), 0);
  const int64_t new_from = DecodeBalance(txn.success(0).request_put().value());
  const int64_t new_to = DecodeBalance(txn.success(1).request_put().value());
  EXPECT_EQ(new_from + new_to, 100);  // the amount moves, the total stays
  EXPECT_LT(new_from, 100);
  EXPECT_EQ(txn.success(0).request_put().key(), from);
  EXPECT_EQ(txn.success(1).request_put().key(), to);

  etcdserverpb::TxnResponse committed;
  committed.set_succeeded(true);
  EXPECT_EQ(op.OnTxn(committed, rng).kind, Operation::Step::kDone);
}

TEST(Operation, FailedCompareBacksOffThenRereadsAndGivesUpAfterMaxRetries) {
  const BenchOptions options = TransferOptions(SendMode::kUnary);
  absl::StatusOr<WorkloadSpec> spec = WorkloadSpec::Create(options);
  ASSERT_TRUE(spec.ok());
  Operation op(&*spec);
  Rng rng(9);
  op.Begin(rng);
  const std::string from = op.range_request().key();
  etcdserverpb::TxnResponse conflict;  // succeeded: false
  for (int attempt = 1; attempt <= 3; ++attempt) {
    ASSERT_EQ(op.OnRange(Found(5, 1), rng).kind, Operation::Step::kSend);
    ASSERT_EQ(op.OnRange(Found(5, 2), rng).kind, Operation::Step::kSend);
    const Operation::Step step = op.OnTxn(conflict, rng);
    EXPECT_EQ(op.retries(), attempt);
    if (attempt <= options.max_retries) {
      ASSERT_EQ(step.kind, Operation::Step::kBackoff);
      // Full jitter below base * 2^(attempt - 1).
      EXPECT_LT(step.backoff, absl::ToChronoNanoseconds(options.backoff_base) * (1 << (attempt - 1)));
      op.Resume();
      ASSERT_EQ(op.rpc(), Rpc::kRange);
      EXPECT_EQ(op.range_request().key(), from);  // the same transfer, read again
    } else {
      EXPECT_EQ(step.kind, Operation::Step::kGiveUp);
    }
  }
}

TEST(Operation, PipelineWrapsSingleRequestsInATxnWithNoCompares) {
  BenchOptions options;
  options.workload = Workload::kRange;
  options.mode = SendMode::kPipeline;
  options.keys = 100;
  options.range_size = 10;
  absl::StatusOr<WorkloadSpec> spec = WorkloadSpec::Create(options);
  ASSERT_TRUE(spec.ok());
  Operation op(&*spec);
  Rng rng(1);
  op.Begin(rng);
  const etcdserverpb::TxnRequest& wrapped = op.pipeline_request();
  EXPECT_EQ(wrapped.compare_size(), 0);
  ASSERT_EQ(wrapped.success_size(), 1);
  ASSERT_TRUE(wrapped.success(0).has_request_range());
  const etcdserverpb::RangeRequest& range = wrapped.success(0).request_range();
  // Ten consecutive keys: [key(i), key(i + 10)).
  const uint64_t first = std::stoull(range.key().substr(6));
  EXPECT_EQ(std::stoull(range.range_end().substr(6)), first + 10);
  EXPECT_LE(first + 10, 100u);
  EXPECT_EQ(op.OnPipelineResponse(etcdserverpb::TxnResponse(), rng).kind, Operation::Step::kDone);
  EXPECT_FALSE(range.serializable());  // linearizable unless asked
}

TEST(Operation, SerializableConsistencyMarksEveryRead) {
  BenchOptions options;
  options.workload = Workload::kGet;
  options.serializable = true;
  absl::StatusOr<WorkloadSpec> spec = WorkloadSpec::Create(options);
  ASSERT_TRUE(spec.ok());
  Operation op(&*spec);
  Rng rng(1);
  op.Begin(rng);
  ASSERT_EQ(op.rpc(), Rpc::kRange);
  EXPECT_TRUE(op.range_request().serializable());
}

TEST(Operation, PreloadOfATransferWorkloadWritesTheInitialBalance) {
  BenchOptions options = TransferOptions(SendMode::kUnary);
  options.initial_balance = 250;
  absl::StatusOr<WorkloadSpec> spec = WorkloadSpec::Create(options);
  ASSERT_TRUE(spec.ok());
  Operation op(&*spec);
  op.BeginPreload(1);
  ASSERT_EQ(op.rpc(), Rpc::kPut);
  EXPECT_EQ(op.put_request().key(), "bench/0000000001");
  EXPECT_EQ(op.put_request().value().size(), 20u);
  EXPECT_EQ(DecodeBalance(op.put_request().value()), 250);
}

}  // namespace
}  // namespace revkv::client
