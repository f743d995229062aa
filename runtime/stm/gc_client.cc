// The STM as the collector's client (runtime/gc CollectorClient): the snapshot horizon, and the
// relocation of transaction state across minor and major collections (DESIGN 2.3 "Collapsing chains in
// a major collection"): read sets, global_to_local, the recent-reads cache, gcroots and objects to
// publish are moved to the *same* revision's new address and rehashed, never redirected along a chain.
// A transaction whose read set holds a revision that is no longer the newest is doomed: it would fail
// validation anyway, and aborting it early frees the old revision sooner.
#include <algorithm>
#include <mutex>

#include "runtime/heap/object_format.h"
#include "runtime/stm/descriptor.h"

namespace revkv::runtime::stm {

namespace {

class StmCollectorClient final : public CollectorClient {
 public:
  uint64_t SnapshotHorizon() override { return stm::SnapshotHorizon(); }

  void RelocateThreadState(void* state, Relocator& relocator, CollectionKind kind) override {
    auto* d = static_cast<TxDescriptor*>(state);
    if (kind == CollectionKind::kMajor) d->pending_hint_count = 0;  // shortcuts only: not worth moving
    if (d->mode != TxMode::kReadWrite) return;                      // a snapshot holds nothing but its stack

    if (!d->global_to_local.empty()) {
      absl::flat_hash_map<Object*, Object*> moved;
      moved.reserve(d->global_to_local.size());
      for (const auto& [r, l] : d->global_to_local)
        moved.emplace(relocator.Relocate(r), relocator.Relocate(l));
      d->global_to_local.swap(moved);
    }

    // The recent-reads cache is keyed by address: rebuild it from the old entries.
    TxDescriptor::RecentRead old[kRecentReadsSlots];
    std::copy(std::begin(d->recent_reads_cache), std::end(d->recent_reads_cache), std::begin(old));
    for (auto& e : d->recent_reads_cache) e = TxDescriptor::RecentRead{nullptr, 0};
    for (const auto& e : old) {
      if (e.object == nullptr) continue;
      Object* moved = relocator.Relocate(e.object);
      TxDescriptor::RecentRead& slot = d->recent_reads_cache[TxDescriptor::HashSlot(moved)];
      if (slot.object == nullptr || slot.count < e.count) slot = TxDescriptor::RecentRead{moved, e.count};
    }

    // A transaction that has written and read a revision that has since been replaced would fail
    // validation at commit: doom it now. One that has only read commits without validation (its reads
    // are consistent as of its start), so it is left alone.
    bool writes = !d->gcroots.empty();
    for (const auto& [r, l] : d->global_to_local) writes = writes || l->HasFlag(kWritten);
    for (Object*& r : d->list_of_read_objects) {
      r = relocator.Relocate(r);
      if (writes && kind == CollectionKind::kMajor &&
          IsRevisionPointer(r->h_revision.load(std::memory_order_relaxed))) {
#ifndef REVKV_MUTATION_NO_DOOM  // mutation switch: see commit.cc
        d->doomed = true;
#endif
      }
    }
    // Every cached object is also in the read list (AddInReadSet puts it in both), and relocation maps
    // an object to the same address wherever it is found, so the two stay consistent.

    for (GcRoot& g : d->gcroots) {
      g.r = relocator.Relocate(g.r);
      g.l = relocator.Relocate(g.l);
    }
    // AcquireLocks takes the heads in address order, and evacuation does not preserve it: a commit
    // that waits in a safe region after sorting (BecomeInevitable, GetGlobalCurTimeInCommit) would
    // otherwise lock out of order and could deadlock with another committer.
#ifndef REVKV_MUTATION_NO_LOCK_ORDER  // mutation switch: see commit.cc
    std::sort(d->gcroots.begin(), d->gcroots.end(),
              [](const GcRoot& a, const GcRoot& b) { return a.r < b.r; });
#endif
    for (auto& [root, object] : d->publish_at_commit) object = relocator.Relocate(object);
    for (Object*& o : d->new_versioned) o = relocator.Relocate(o);
  }

  uint64_t RevisionsSuperseded() override {
    return stm::RevisionsSuperseded().load(std::memory_order_relaxed);
  }
};

}  // namespace

void InitializeStm() {
  static std::once_flag once;
  std::call_once(once, [] {
    static StmCollectorClient* client = new StmCollectorClient();
    SetCollectorClient(client);
  });
}

}  // namespace revkv::runtime::stm
