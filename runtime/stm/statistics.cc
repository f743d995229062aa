// STM statistics: per-descriptor counters (each written only by its owner thread, relaxed), summed on
// demand.
#include "runtime/port/port.h"
#include "runtime/stm/descriptor.h"

namespace revkv::runtime::stm {

const char* AbortCauseName(AbortCause cause) {
  switch (cause) {
    case AbortCause::kReadConflict:
      return "read_conflict";
    case AbortCause::kLock:
      return "lock";
    case AbortCause::kValidation:
      return "validation";
    case AbortCause::kDoomedByGc:
      return "doomed_by_gc";
    case AbortCause::kExplicit:
      return "explicit";
  }
  return "unknown";
}

StmStatistics GetStmStatistics() {
  StmStatistics s;
  const uint64_t now = port::NowNanos();
  ForEachDescriptor([&](TxDescriptor& d) {
    const TxCounters& c = d.counters;
    s.commits += c.commits.load(std::memory_order_relaxed);
    s.write_commits += c.write_commits.load(std::memory_order_relaxed);
    s.snapshot_reads += c.snapshot_reads.load(std::memory_order_relaxed);
    for (int i = 0; i < kAbortCauses; ++i) s.aborts[i] += c.aborts[i].load(std::memory_order_relaxed);
    s.retries += c.retries.load(std::memory_order_relaxed);
    s.inevitable += c.inevitable.load(std::memory_order_relaxed);
    s.inevitable_wait_nanos += c.inevitable_wait_nanos.load(std::memory_order_relaxed);
    s.chains_compressed += c.chains_compressed.load(std::memory_order_relaxed);
    s.chain_hops += c.chain_hops.load(std::memory_order_relaxed);
    s.skip_hints_taken += c.skip_hints_taken.load(std::memory_order_relaxed);
    s.skip_hints_set += c.skip_hints_set.load(std::memory_order_relaxed);
    s.auto_localizations += c.auto_localizations.load(std::memory_order_relaxed);
    s.read_set_sizes.Merge(c.read_set_sizes.Snapshot());
    s.write_set_sizes.Merge(c.write_set_sizes.Snapshot());
    if (d.snapshot_time.load(std::memory_order_acquire) != 0) {
      ++s.live_snapshots;
      const uint64_t started = d.snapshot_start_nanos.load(std::memory_order_relaxed);
      if (started != 0 && now > started)
        s.oldest_snapshot_age_nanos = std::max(s.oldest_snapshot_age_nanos, now - started);
    }
  });
  s.revisions_superseded = RevisionsSuperseded().load(std::memory_order_relaxed);
  s.global_time = LastCommittedTime();
  s.retained_time = RetainedTime();
  return s;
}

}  // namespace revkv::runtime::stm
