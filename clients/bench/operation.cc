// The workloads' operations.
#include "clients/bench/operation.h"

#include <algorithm>

#include "clients/bench/balance.h"

namespace revkv::client {
namespace {

// The largest amount one transfer moves; each transfer moves 1 to this much.
constexpr int64_t kMaxTransferAmount = 10;

std::chrono::nanoseconds ToChrono(absl::Duration d) { return absl::ToChronoNanoseconds(d); }

}  // namespace

absl::StatusOr<WorkloadSpec> WorkloadSpec::Create(const BenchOptions& options) {
  absl::StatusOr<KeySpace> keys = KeySpace::Create(options.key_prefix, options.key_size, options.keys);
  if (!keys.ok()) return keys.status();
  // Operations choose keys in [0, choices): a range must fit before the end of the key space.
  const uint64_t choices =
      options.workload == Workload::kRange ? options.keys - options.range_size + 1 : options.keys;
  KeyChooser chooser = KeyChooser::Uniform(choices);
  if (options.key_distribution == KeyDistribution::kZipfian) {
    absl::StatusOr<ZipfianDistribution> zipfian = ZipfianDistribution::Create(choices, options.zipf_exponent);
    if (!zipfian.ok()) return zipfian.status();
    chooser = KeyChooser::Zipfian(*zipfian);
  }
  WorkloadSpec spec{.keys = *std::move(keys), .chooser = chooser};
  spec.workload = options.workload;
  spec.mode = options.mode;
  spec.value_size = options.value_size;
  // A fixed printable payload; its content does not matter to the servers measured.
  Rng rng(options.seed ^ 0x76616c7565ULL);
  spec.value.resize(options.value_size);
  for (char& c : spec.value) c = static_cast<char>('a' + rng.Uniform(26));
  spec.read_ratio = options.read_ratio;
  spec.range_size = options.range_size;
  spec.serializable = options.serializable;
  spec.initial_balance = options.initial_balance;
  spec.max_retries = options.max_retries;
  spec.backoff_base = ToChrono(options.backoff_base);
  spec.backoff_max = ToChrono(options.backoff_max);
  return spec;
}

Operation::Operation(const WorkloadSpec* spec) : spec_(spec) {
  if (spec->mode == SendMode::kPipeline) {
    range_ = range_wrapper_.add_success()->mutable_request_range();
    put_ = put_wrapper_.add_success()->mutable_request_put();
  } else {
    range_ = &plain_range_;
    put_ = &plain_put_;
  }
  range_->set_serializable(spec->serializable);
}

const etcdserverpb::TxnRequest& Operation::pipeline_request() const {
  switch (rpc_) {
    case Rpc::kRange:
      return range_wrapper_;
    case Rpc::kPut:
      return put_wrapper_;
    case Rpc::kTxn:
      break;
  }
  return txn_;
}

void Operation::SetRange(uint64_t first, uint64_t count) {
  spec_->keys.Format(first, range_->mutable_key());
  if (count == 1) {
    range_->clear_range_end();
  } else {
    spec_->keys.Format(first + count, range_->mutable_range_end());
  }
  rpc_ = Rpc::kRange;
}

void Operation::SetPut(uint64_t index, std::string_view value) {
  spec_->keys.Format(index, put_->mutable_key());
  put_->mutable_value()->assign(value.data(), value.size());
  rpc_ = Rpc::kPut;
}

void Operation::BeginPreload(uint64_t index) {
  stage_ = Stage::kSingle;
  retries_ = 0;
  if (spec_->workload == Workload::kTxn) {
    EncodeBalance(spec_->initial_balance, spec_->value_size, &scratch_);
    SetPut(index, scratch_);
  } else {
    SetPut(index, spec_->value);
  }
}

void Operation::Begin(Rng& rng) {
  stage_ = Stage::kSingle;
  retries_ = 0;
  switch (spec_->workload) {
    case Workload::kPut:
      SetPut(spec_->chooser.Next(rng), spec_->value);
      return;
    case Workload::kGet:
      SetRange(spec_->chooser.Next(rng), 1);
      return;
    case Workload::kMixed:
      if (rng.NextDouble() < spec_->read_ratio) {
        SetRange(spec_->chooser.Next(rng), 1);
      } else {
        SetPut(spec_->chooser.Next(rng), spec_->value);
      }
      return;
    case Workload::kRange:
      SetRange(spec_->chooser.Next(rng), static_cast<uint64_t>(spec_->range_size));
      return;
    case Workload::kTxn:
      from_ = spec_->chooser.Next(rng);
      do {
        to_ = spec_->chooser.Next(rng);
      } while (to_ == from_);  // a key put twice in one txn is an error; keys >= 2 is validated
      Resume();
      return;
  }
}

void Operation::Resume() {
  stage_ = Stage::kReadFrom;
  SetRange(from_, 1);
}

void Operation::BuildTransferTxn(Rng& rng) {
  if (txn_.compare_size() == 0) {  // first transfer of this slot: build the shape once
    for (int i = 0; i < 2; ++i) {
      etcdserverpb::Compare* compare = txn_.add_compare();
      compare->set_result(etcdserverpb::Compare::EQUAL);
      compare->set_target(etcdserverpb::Compare::MOD);
      txn_.add_success()->mutable_request_put();
    }
  }
  const int64_t amount = 1 + static_cast<int64_t>(rng.Uniform(kMaxTransferAmount));
  const uint64_t keys[2] = {from_, to_};
  const int64_t mod_revisions[2] = {from_mod_revision_, to_mod_revision_};
  const int64_t balances[2] = {from_balance_ - amount, to_balance_ + amount};
  for (int i = 0; i < 2; ++i) {
    etcdserverpb::Compare* compare = txn_.mutable_compare(i);
    spec_->keys.Format(keys[i], compare->mutable_key());
    compare->set_mod_revision(mod_revisions[i]);
    etcdserverpb::PutRequest* put = txn_.mutable_success(i)->mutable_request_put();
    spec_->keys.Format(keys[i], put->mutable_key());
    EncodeBalance(balances[i], spec_->value_size, put->mutable_value());
  }
  rpc_ = Rpc::kTxn;
}

Operation::Step Operation::OnRange(const etcdserverpb::RangeResponse& response, Rng& rng) {
  if (stage_ == Stage::kSingle) return {Step::kDone};
  // An absent key has balance 0 and mod_revision 0, which is also what a Compare on it must expect.
  const bool found = response.kvs_size() > 0;
  const int64_t balance = found ? DecodeBalance(response.kvs(0).value()) : 0;
  const int64_t mod_revision = found ? response.kvs(0).mod_revision() : 0;
  if (stage_ == Stage::kReadFrom) {
    from_balance_ = balance;
    from_mod_revision_ = mod_revision;
    stage_ = Stage::kReadTo;
    SetRange(to_, 1);
    return {Step::kSend};
  }
  to_balance_ = balance;
  to_mod_revision_ = mod_revision;
  stage_ = Stage::kCommit;
  BuildTransferTxn(rng);
  return {Step::kSend};
}

Operation::Step Operation::OnPut(const etcdserverpb::PutResponse& /*response*/) { return {Step::kDone}; }

Operation::Step Operation::OnTxn(const etcdserverpb::TxnResponse& response, Rng& rng) {
  if (response.succeeded()) return {Step::kDone};
  ++retries_;
  if (retries_ > spec_->max_retries) return {Step::kGiveUp};
  // Full jitter: uniform in [0, min(max, base * 2^(retries - 1))).
  const int shift = std::min(retries_ - 1, 30);
  const int64_t cap = std::min(spec_->backoff_max.count(), spec_->backoff_base.count() << shift);
  return {Step::kBackoff, std::chrono::nanoseconds(rng.Uniform(static_cast<uint64_t>(cap)))};
}

Operation::Step Operation::OnPipelineResponse(const etcdserverpb::TxnResponse& response, Rng& rng) {
  switch (rpc_) {
    case Rpc::kRange: {
      const bool has = response.responses_size() > 0 && response.responses(0).has_response_range();
      return OnRange(
          has ? response.responses(0).response_range() : etcdserverpb::RangeResponse::default_instance(),
          rng);
    }
    case Rpc::kPut:
      return {Step::kDone};
    case Rpc::kTxn:
      break;
  }
  return OnTxn(response, rng);
}

}  // namespace revkv::client
