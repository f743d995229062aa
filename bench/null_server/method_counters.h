// Per-method request counters of the null server.
//
// Each worker thread owns one MethodCounters and is its only writer; any thread may read it. A count is
// bumped when a request arrives, before its reply is sent, so once a client has received every reply the
// counts it reads are exact.
#ifndef REVKV_BENCH_NULL_SERVER_METHOD_COUNTERS_H_
#define REVKV_BENCH_NULL_SERVER_METHOD_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace revkv::bench {

// The methods the null server counts. kPipeline counts messages on revkv.v1.KV/Pipeline streams, not
// streams; kUnimplemented counts calls to the Maintenance and Cluster methods it does not serve.
enum class NullMethod : int {
  kRange,
  kPut,
  kDeleteRange,
  kTxn,
  kCompact,
  kStatus,
  kPipeline,
  kMemberList,
  kPipelineBatch,  // messages on revkv.v1.KV/PipelineBatch streams
  kUnimplemented,
  kCount,
};
inline constexpr int kNullMethodCount = static_cast<int>(NullMethod::kCount);

// The method's short name as gRPC spells it ("Range", "Pipeline", ...).
std::string_view NullMethodName(NullMethod method);

// A snapshot of request counts, indexed by NullMethod.
struct NullServerCounts {
  std::array<uint64_t, kNullMethodCount> by_method{};

  uint64_t operator[](NullMethod method) const { return by_method[static_cast<int>(method)]; }
  // Every count keyed by method name, zero counts included.
  std::map<std::string, uint64_t> ToMap() const;
};

// Request counters of one worker thread. Single writer (the owner worker), any number of readers.
class alignas(64) MethodCounters {
 public:
  // Owner thread only. A relaxed load and store, not a read-modify-write: there is one writer, and
  // readers only need each counter to be a value the writer stored (no ordering with other memory).
  void Increment(NullMethod method) {
    std::atomic<uint64_t>& counter = counts_[static_cast<int>(method)];
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Thread-safe. Adds this worker's counts into `total`.
  void AddTo(NullServerCounts* total) const {
    for (int i = 0; i < kNullMethodCount; ++i) {
      total->by_method[i] += counts_[i].load(std::memory_order_relaxed);
    }
  }

 private:
  std::array<std::atomic<uint64_t>, kNullMethodCount> counts_{};
};

// Request counters bumped from any thread (the callback API runs handlers on gRPC's threads): a few
// cache-line-separated shards, each thread bumping the one its id hashes to, so two threads rarely share
// a line. Thread-safe.
class SharedMethodCounters {
 public:
  // A relaxed fetch_add: readers need only each count to be exact once the writers are done (a client
  // that has all its replies reads counts bumped before those replies were sent).
  void Increment(NullMethod method);
  // Adds every shard's counts into `total`.
  void AddTo(NullServerCounts* total) const;

 private:
  static constexpr int kShards = 8;
  struct alignas(64) Shard {
    std::array<std::atomic<uint64_t>, kNullMethodCount> counts{};
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace revkv::bench

#endif  // REVKV_BENCH_NULL_SERVER_METHOD_COUNTERS_H_
