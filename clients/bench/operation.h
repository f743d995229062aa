// One logical operation of a workload, as a state machine over etcd requests.
//
// A put, get, mixed or range operation is one request. A transfer (the txn workload) is three or more:
// Range the source key, Range the destination key, then a Txn that compares both keys' mod_revision with
// what was read and, if neither changed, puts both new balances. When the compare fails the transfer
// backs off for a jittered, exponentially growing time and starts again from the reads; after
// max_retries failures it gives up.
//
// The transport asks the operation what to send (rpc() and the request for it) and hands back each
// response; the operation answers with the next step. Requests are built in messages the operation
// keeps from one operation to the next, so a warm operation allocates nothing. In pipeline mode single
// requests are wrapped in a TxnRequest with one success op and no compares, as revkv.v1.KV/Pipeline
// carries only transactions.
#ifndef REVKV_CLIENTS_BENCH_OPERATION_H_
#define REVKV_CLIENTS_BENCH_OPERATION_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "clients/bench/key_space.h"
#include "clients/bench/options.h"
#include "clients/bench/random.h"
#include "etcdserverpb/rpc.pb.h"

namespace revkv::client {

// The etcd methods a benchmark sends.
enum class Rpc : uint8_t { kRange, kPut, kTxn };

// What every operation of a run shares: the workload, its keys and the value it writes. Const-safe only.
struct WorkloadSpec {
  // INVALID_ARGUMENT for options that make no key space (see KeySpace::Create) or no Zipfian distribution.
  static absl::StatusOr<WorkloadSpec> Create(const BenchOptions& options);

  Workload workload = Workload::kPut;
  SendMode mode = SendMode::kUnary;
  KeySpace keys;
  KeyChooser chooser;
  std::string value;  // what put, mixed and preload write (value_size bytes)
  int value_size = 0;
  double read_ratio = 0;
  int range_size = 1;
  bool serializable = false;
  int64_t initial_balance = 0;
  int max_retries = 0;
  std::chrono::nanoseconds backoff_base{0};
  std::chrono::nanoseconds backoff_max{0};
};

// One slot's operation, reused operation after operation. Owner thread only.
class Operation {
 public:
  struct Step {
    enum Kind : uint8_t {
      kDone,     // the operation completed
      kSend,     // send rpc()'s request next
      kBackoff,  // wait `backoff`, then call Resume and send
      kGiveUp,   // a transfer exhausted its retries
    };
    Kind kind = kDone;
    std::chrono::nanoseconds backoff{0};
  };

  // `spec` must outlive the operation.
  explicit Operation(const WorkloadSpec* spec);
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  // Starts a preload put of key `index`.
  void BeginPreload(uint64_t index);
  // Starts the workload's next operation, choosing keys (and read or write) with `rng`.
  void Begin(Rng& rng);
  // After a kBackoff step: starts the transfer again from its reads.
  void Resume();

  Rpc rpc() const { return rpc_; }
  int retries() const { return retries_; }  // compare failures of the current transfer

  // The request to send for rpc() in unary mode.
  const etcdserverpb::RangeRequest& range_request() const { return *range_; }
  const etcdserverpb::PutRequest& put_request() const { return *put_; }
  const etcdserverpb::TxnRequest& txn_request() const { return txn_; }
  // The request to send for rpc() in pipeline mode: the Txn itself, or a single request wrapped in one.
  const etcdserverpb::TxnRequest& pipeline_request() const;

  // Each takes the response to rpc()'s request and says what comes next.
  Step OnRange(const etcdserverpb::RangeResponse& response, Rng& rng);
  Step OnPut(const etcdserverpb::PutResponse& response);
  Step OnTxn(const etcdserverpb::TxnResponse& response, Rng& rng);
  // The same, for a pipeline response: unwraps single requests' responses.
  Step OnPipelineResponse(const etcdserverpb::TxnResponse& response, Rng& rng);

 private:
  enum class Stage : uint8_t { kSingle, kReadFrom, kReadTo, kCommit };

  void SetRange(uint64_t first, uint64_t count);
  void SetPut(uint64_t index, std::string_view value);
  void BuildTransferTxn(Rng& rng);

  const WorkloadSpec* spec_;
  Rpc rpc_ = Rpc::kPut;
  Stage stage_ = Stage::kSingle;

  // Requests. In unary mode range_ and put_ point at plain_range_ and plain_put_; in pipeline mode at the
  // single success op of range_wrapper_ and put_wrapper_.
  etcdserverpb::RangeRequest plain_range_;
  etcdserverpb::PutRequest plain_put_;
  etcdserverpb::TxnRequest range_wrapper_;
  etcdserverpb::TxnRequest put_wrapper_;
  etcdserverpb::RangeRequest* range_ = nullptr;
  etcdserverpb::PutRequest* put_ = nullptr;
  etcdserverpb::TxnRequest txn_;
  std::string scratch_;  // a balance being encoded

  // The transfer in progress.
  uint64_t from_ = 0;
  uint64_t to_ = 0;
  int64_t from_balance_ = 0;
  int64_t to_balance_ = 0;
  int64_t from_mod_revision_ = 0;
  int64_t to_mod_revision_ = 0;
  int retries_ = 0;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_OPERATION_H_
