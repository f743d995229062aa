// Names of the null server's counted methods.
#include "bench/null_server/method_counters.h"

#include <functional>
#include <thread>

namespace revkv::bench {

std::string_view NullMethodName(NullMethod method) {
  switch (method) {
    case NullMethod::kRange:
      return "Range";
    case NullMethod::kPut:
      return "Put";
    case NullMethod::kDeleteRange:
      return "DeleteRange";
    case NullMethod::kTxn:
      return "Txn";
    case NullMethod::kCompact:
      return "Compact";
    case NullMethod::kStatus:
      return "Status";
    case NullMethod::kPipeline:
      return "Pipeline";
    case NullMethod::kMemberList:
      return "MemberList";
    case NullMethod::kPipelineBatch:
      return "PipelineBatch";
    case NullMethod::kUnimplemented:
      return "Unimplemented";
    case NullMethod::kCount:
      break;
  }
  return "?";
}

std::map<std::string, uint64_t> NullServerCounts::ToMap() const {
  std::map<std::string, uint64_t> map;
  for (int i = 0; i < kNullMethodCount; ++i) {
    map.emplace(NullMethodName(static_cast<NullMethod>(i)), by_method[i]);
  }
  return map;
}

void SharedMethodCounters::Increment(NullMethod method) {
  thread_local const size_t shard = std::hash<std::thread::id>()(std::this_thread::get_id()) % kShards;
  shards_[shard].counts[static_cast<int>(method)].fetch_add(1, std::memory_order_relaxed);
}

void SharedMethodCounters::AddTo(NullServerCounts* total) const {
  for (const Shard& shard : shards_) {
    for (int i = 0; i < kNullMethodCount; ++i) {
      total->by_method[i] += shard.counts[i].load(std::memory_order_relaxed);
    }
  }
}

}  // namespace revkv::bench
