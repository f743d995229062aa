// ops: in-process operations per second of the Store (benchmarks.h).
//
// The Store runs alone, created without a log (Store::Create(options, nullptr)): requests are neither
// serialized nor appended anywhere, so this is the cost of the transactions themselves. The wal
// sub-benchmark measures the path through the Engine and its log.
//
// One child process preloads the key space with Puts and runs a major collection, then runs every
// (case, threads) pair `runs` times, interleaved (run 1 of every pair, then run 2, ...), so that a slow
// drift of the machine spreads over all pairs instead of landing on one. Keys are uniform; Puts and Txns
// overwrite preloaded keys, so the key count stays fixed and history stays within the store's default
// window. Every result is checked (the key was found, the Txn's compare held): a failure aborts the child.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/store/benchmarks.h"
#include "bench/store/child_process.h"
#include "bench/store/timed_run.h"
#include "runtime/gc/gc.h"
#include "runtime/stm/stm.h"
#include "server/store/store.h"

namespace revkv::bench::store {

namespace {

using nlohmann::json;

enum class OpsCase { kGet, kGetBatch, kPut, kMix, kTxn };
constexpr OpsCase kCases[] = {OpsCase::kGet, OpsCase::kGetBatch, OpsCase::kPut, OpsCase::kMix, OpsCase::kTxn};
// The gets of one kGetBatch operation: PipelineBatch's shape (docs/benchmarks.md 4.4); the case counts
// gets, not batches.
constexpr int kGetBatchSize = 64;
constexpr int kThreadCounts[] = {1, 2};

const char* CaseName(OpsCase c) {
  switch (c) {
    case OpsCase::kGet:
      return "get";
    case OpsCase::kGetBatch:
      return "get x64";
    case OpsCase::kPut:
      return "put";
    case OpsCase::kMix:
      return "mix 90/10";
    case OpsCase::kTxn:
      return "txn";
  }
  return "?";
}

const char* CaseDescription(OpsCase c) {
  switch (c) {
    case OpsCase::kGet:
      return "Range of one key";
    case OpsCase::kGetBatch:
      return "TxnBatch of 64 Txns, each a Range of one key (PipelineBatch's path); counts gets";
    case OpsCase::kPut:
      return "Put of one key";
    case OpsCase::kMix:
      return "90% get, 10% put, chosen per operation";
    case OpsCase::kTxn:
      return "Txn: mod_revision(k1) > 0 ? put k1, put k2";
  }
  return "?";
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "revkv-bench-store ops: %s\n", what.c_str());
  std::abort();
}

// One thread's requests, built once; each operation rewrites their keys in place (every key has the
// same length). Owner thread only.
class OpsWorker {
 public:
  OpsWorker(server::Store& store, OpsCase c, uint64_t keys, uint64_t seed)
      : store_(store), case_(c), keys_(keys), rng_(seed) {
    const std::string key = Key(0);
    const std::string value = Value(0);
    range_.set_key(key);
    put_.set_key(key);
    put_.set_value(value);
    etcdserverpb::Compare* compare = txn_.add_compare();
    compare->set_key(key);
    compare->set_target(etcdserverpb::Compare::MOD);
    compare->set_result(etcdserverpb::Compare::GREATER);
    compare->set_mod_revision(0);
    for (int i = 0; i < 2; ++i) {
      etcdserverpb::PutRequest* p = txn_.add_success()->mutable_request_put();
      p->set_key(key);
      p->set_value(value);
    }
    for (int i = 0; i < kGetBatchSize; ++i)
      get_batch_.Add()->add_success()->mutable_request_range()->set_key(key);
  }

  void Run() {
    switch (case_) {
      case OpsCase::kGet:
        return Get();
      case OpsCase::kGetBatch:
        return GetBatch();
      case OpsCase::kPut:
        return Put();
      case OpsCase::kMix:
        return rng_.Below(10) == 0 ? Put() : Get();
      case OpsCase::kTxn:
        return Txn();
    }
  }

 private:
  void Get() {
    FormatKey(rng_.Below(keys_), range_.mutable_key()->data());
    absl::StatusOr<etcdserverpb::RangeResponse> r = store_.Range(range_);
    if (!r.ok()) Die("Range failed: " + r.status().ToString());
    if (r->kvs_size() != 1) Die("Range did not find preloaded key " + range_.key());
  }

  void GetBatch() {
    for (etcdserverpb::TxnRequest& t : get_batch_) {
      FormatKey(rng_.Below(keys_), t.mutable_success(0)->mutable_request_range()->mutable_key()->data());
    }
    uint64_t wait_lsn = 0;
    store_.TxnBatch(get_batch_, nullptr, &results_, &wait_lsn);
    for (size_t i = 0; i < results_.size(); ++i) {
      if (!results_[i].ok()) Die("TxnBatch failed: " + results_[i].status().ToString());
      const etcdserverpb::TxnResponse& r = results_[i]->response;
      if (r.responses_size() != 1 || r.responses(0).response_range().kvs_size() != 1) {
        Die("TxnBatch did not find preloaded key " +
            get_batch_.Get(static_cast<int>(i)).success(0).request_range().key());
      }
    }
  }

  void Put() {
    FormatKey(rng_.Below(keys_), put_.mutable_key()->data());
    absl::StatusOr<server::WriteResult<etcdserverpb::PutResponse>> r = store_.Put(put_);
    if (!r.ok()) Die("Put failed: " + r.status().ToString());
  }

  void Txn() {
    // Two different keys: etcd rejects a Txn that puts one key twice.
    const uint64_t k1 = rng_.Below(keys_);
    uint64_t k2 = rng_.Below(keys_ - 1);
    if (k2 >= k1) ++k2;
    FormatKey(k1, txn_.mutable_compare(0)->mutable_key()->data());
    FormatKey(k1, txn_.mutable_success(0)->mutable_request_put()->mutable_key()->data());
    FormatKey(k2, txn_.mutable_success(1)->mutable_request_put()->mutable_key()->data());
    absl::StatusOr<server::WriteResult<etcdserverpb::TxnResponse>> r = store_.Txn(txn_);
    if (!r.ok()) Die("Txn failed: " + r.status().ToString());
    if (!r->response.succeeded()) Die("Txn compare failed on preloaded key " + txn_.compare(0).key());
  }

  server::Store& store_;
  const OpsCase case_;
  const uint64_t keys_;
  Rng rng_;
  etcdserverpb::RangeRequest range_;
  etcdserverpb::PutRequest put_;
  etcdserverpb::TxnRequest txn_;
  google::protobuf::RepeatedPtrField<etcdserverpb::TxnRequest> get_batch_;
  std::vector<absl::StatusOr<server::WriteResult<etcdserverpb::TxnResponse>>> results_;
};

absl::StatusOr<json> OpsChild(const Config& config) {
  absl::StatusOr<std::unique_ptr<server::Store>> created =
      server::Store::Create(server::StoreOptions(), nullptr);
  if (!created.ok()) return created.status();
  server::Store& store = **created;

  const uint64_t preload_start = NowNanos();
  etcdserverpb::PutRequest put;
  for (uint64_t i = 0; i < config.ops_keys; ++i) {
    put.set_key(Key(i));
    put.set_value(Value(i));
    if (absl::Status s = store.Put(put).status(); !s.ok()) return s;
  }
  const double preload_seconds = SecondsSince(preload_start);
  runtime::CollectMajor();

  json raw = json::array();
  for (int run = 1; run <= config.runs; ++run) {
    for (OpsCase c : kCases) {
      for (int threads : kThreadCounts) {
        const runtime::stm::StmStatistics before = runtime::stm::GetStmStatistics();
        const TimedRunResult r = RunTimed(threads, config.seconds, /*record_latency=*/false, [&](int t) {
          const uint64_t seed = MakeSeed(run, static_cast<uint64_t>(c), threads, t);
          auto worker = std::make_shared<OpsWorker>(store, c, config.ops_keys, seed);
          return [worker] { worker->Run(); };
        });
        const runtime::stm::StmStatistics after = runtime::stm::GetStmStatistics();
        const uint64_t operations = r.operations * (c == OpsCase::kGetBatch ? kGetBatchSize : 1);
        raw.push_back({{"case", CaseName(c)},
                       {"threads", threads},
                       {"run", run},
                       {"operations", operations},
                       {"seconds", r.seconds},
                       {"ops_per_s", static_cast<double>(operations) / r.seconds},
                       {"stm_retries", after.retries - before.retries}});
      }
    }
  }
  if (store.KeyCount() != static_cast<int64_t>(config.ops_keys)) {
    return absl::InternalError(
        absl::StrCat("the store holds ", store.KeyCount(), " keys, not ", config.ops_keys));
  }
  return json{{"preload_seconds", preload_seconds}, {"raw", raw}};
}

}  // namespace

absl::StatusOr<json> RunOps(const Config& config) {
  if (config.ops_keys < 2) return absl::InvalidArgumentError("ops needs at least 2 keys");
  std::fprintf(stderr, "ops: preloading %llu keys, then %zu cases x %d run(s) of %.2f s\n",
               static_cast<unsigned long long>(config.ops_keys), std::size(kCases) * std::size(kThreadCounts),
               config.runs, config.seconds);
  absl::StatusOr<json> child = RunInChild("ops", config.max_heap_bytes, [&] { return OpsChild(config); });
  if (!child.ok()) return child.status();

  json cases = json::array();
  for (OpsCase c : kCases) {
    json row = {{"case", CaseName(c)}, {"description", CaseDescription(c)}};
    for (int threads : kThreadCounts) {
      std::vector<double> rates;
      double operations = 0, retries = 0;
      for (const json& r : (*child)["raw"]) {
        if (r["case"] != CaseName(c) || r["threads"] != threads) continue;
        rates.push_back(r["ops_per_s"].get<double>());
        operations += r["operations"].get<double>();
        retries += r["stm_retries"].get<double>();
      }
      const std::string t = std::to_string(threads) + "t";
      row["ops_per_s_" + t] = Median(rates);
      row["ops_per_s_runs_" + t] = rates;
      row["retries_per_1k_ops_" + t] = operations > 0 ? 1000.0 * retries / operations : 0.0;
    }
    const double one = row["ops_per_s_1t"].get<double>();
    row["ratio_2t_1t"] = one > 0 ? row["ops_per_s_2t"].get<double>() / one : 0.0;
    cases.push_back(row);
  }
  return json{{"store", "Store alone (Store::Create without a log)"},
              {"keys", config.ops_keys},
              {"key_bytes", kKeyBytes},
              {"value_bytes", kValueBytes},
              {"seconds_per_case", config.seconds},
              {"runs", config.runs},
              {"preload_seconds", (*child)["preload_seconds"]},
              {"cases", cases},
              {"raw", (*child)["raw"]}};
}

void PrintOps(const json& result, std::FILE* out) {
  std::fprintf(
      out,
      "\nops: in-process store operations per second, %s; %llu preloaded keys (%zu B keys, %zu B "
      "values), uniform\n     %.2f s per case, median of %d interleaved run(s); spread = (max - min) / "
      "median over the runs\n",
      result["store"].get<std::string>().c_str(), result["keys"].get<unsigned long long>(), kKeyBytes,
      kValueBytes, result["seconds_per_case"].get<double>(), result["runs"].get<int>());
  std::fprintf(out, "%-10s %14s %7s %14s %7s %7s %16s  %s\n", "case", "1 thread ops/s", "spread", "2 threads",
               "spread", "2t/1t", "retries/1k 1t 2t", "operation");
  const auto spread = [](const json& runs, double median) {
    if (runs.size() < 2 || median <= 0) return std::string("-");
    double lo = runs[0].get<double>(), hi = lo;
    for (const json& r : runs) {
      lo = std::min(lo, r.get<double>());
      hi = std::max(hi, r.get<double>());
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * (hi - lo) / median);
    return std::string(buf);
  };
  for (const json& row : result["cases"]) {
    const double one = row["ops_per_s_1t"].get<double>(), two = row["ops_per_s_2t"].get<double>();
    std::fprintf(out, "%-10s %14.0f %7s %14.0f %7s %7.2f %8.2f %7.2f  %s\n",
                 row["case"].get<std::string>().c_str(), one, spread(row["ops_per_s_runs_1t"], one).c_str(),
                 two, spread(row["ops_per_s_runs_2t"], two).c_str(), row["ratio_2t_1t"].get<double>(),
                 row["retries_per_1k_ops_1t"].get<double>(), row["retries_per_1k_ops_2t"].get<double>(),
                 row["description"].get<std::string>().c_str());
  }
}

}  // namespace revkv::bench::store
