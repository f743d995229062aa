// Copying the store's state into a checkpoint writer (state_copy.h).
#include "server/engine/state_copy.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/safepoint/safepoint.h"

namespace revkv::server {

StateCopy CopyStoreState(Store& store, int64_t revision, CheckpointWriter* writer) {
  StateCopy result;
  std::vector<StoredKeyValue> batch;
  auto write_batch = [&] {
    runtime::SafeRegion io;
    for (const StoredKeyValue& kv : batch) {
      if (!result.write.ok()) break;
      result.write = writer->Add(
          CheckpointEntry{kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version, kv.lease});
    }
    batch.clear();
  };
  // The leases of the same snapshot, after the entries (16 bytes each, kept in memory until then).
  std::vector<CheckpointLease> leases;
  const std::function<void(int64_t, int64_t)> visit_lease = [&](int64_t id, int64_t ttl) {
    leases.push_back(CheckpointLease{id, ttl});
  };
  // The state records (alarms, auth) of the same snapshot, after the leases.
  std::vector<std::pair<uint32_t, std::string>> states;
  const std::function<void(uint32_t, std::string_view)> visit_state =
      [&](uint32_t kind, std::string_view bytes) { states.emplace_back(kind, std::string(bytes)); };
  int64_t snapshot_revision = 0;
  result.read = store.ForEachAt(
      revision,
      [&](const StoredKeyValue& kv) {
        batch.push_back(kv);
        if (batch.size() >= 4096) write_batch();
      },
      &snapshot_revision, &visit_lease, &visit_state);
  if (!result.read.ok()) return result;
  write_batch();
  runtime::SafeRegion io;
  for (const CheckpointLease& l : leases) {
    if (!result.write.ok()) break;
    result.write = writer->AddLease(l);
  }
  for (const auto& [kind, bytes] : states) {
    if (!result.write.ok()) break;
    result.write = writer->AddState({kind, bytes});
  }
  return result;
}

}  // namespace revkv::server
