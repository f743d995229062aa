// Copying the store's state at one revision into a checkpoint writer: what a checkpoint and a snapshot
// image (Maintenance/Snapshot) both hold.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "server/checkpoint/checkpoint.h"
#include "server/store/store.h"

namespace revkv::server {

// The outcome of CopyStoreState: the snapshot read's status (errors::Compacted() when the history window
// moved past the revision before the read started: choose again) and the writer's.
struct StateCopy {
  absl::Status read;
  absl::Status write;
  bool ok() const { return read.ok() && write.ok(); }
};

// Adds the state of `store` at `revision` to `writer` with one snapshot read (writers keep going): the
// key-values in key order, copied out in batches and written in safe regions (so a collection never
// waits for the disk), then the leases and the state records of the same snapshot. Does not Finish the
// writer. The calling thread must be registered with the runtime.
StateCopy CopyStoreState(Store& store, int64_t revision, CheckpointWriter* writer);

}  // namespace revkv::server
