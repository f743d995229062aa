// Fuzz target: the checkpoint reader (VerifyCheckpoint and LoadNewestValidCheckpoint, as the engine
// calls it at startup).
//
// Input: the bytes of one checkpoint file, named after the revision its header claims (bytes 16..23;
// revision 1 if the file is too short or the revision negative), so a mutated file is still read as
// the newest checkpoint rather than refused for its name alone.
//
// Checks: no crash, leak or undefined behaviour; VerifyCheckpoint either accepts the file or fails with
// DataLoss (damage) or FailedPrecondition (another format version); the load agrees with it: a verified
// file is loaded, its entry count and lease count visited, while a damaged one is skipped, renamed .corrupt,
// and none of its entries or leases reaches the visitors; a file the reader accepts is exactly what
// CheckpointWriter writes for the same revisions, entries and leases (the format has one encoding, so nothing
// unchecked hides in it).
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "server/checkpoint/checkpoint.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/wal/file_system.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/memory_file_system.h"

namespace revkv::server::fuzz {
namespace {

constexpr char kDir[] = "/checkpoints";

struct OwnedEntry {
  std::string key;
  std::string value;
  int64_t create_revision, mod_revision, version, lease;
};

void Run(const uint8_t* data, size_t size) {
  std::string_view file(reinterpret_cast<const char*>(data), size);
  int64_t revision = 1;
  if (file.size() >= 24) {
    std::memcpy(&revision, file.data() + 16, sizeof revision);
    if (revision < 0) revision = 1;
  }
  MemoryFileSystem fs;
  const std::string path = JoinPath(kDir, CheckpointFileName(revision));
  fs.SetFile(path, std::string(file));

  absl::StatusOr<CheckpointInfo> verified = VerifyCheckpoint(&fs, path);
  if (!verified.ok()) {
    FUZZ_CHECK(verified.status().code() == absl::StatusCode::kDataLoss ||
                   verified.status().code() == absl::StatusCode::kFailedPrecondition,
               "unexpected error: %s", verified.status().ToString().c_str());
  }

  std::vector<OwnedEntry> entries;
  std::vector<CheckpointLease> leases;
  auto on_lease = [&](const CheckpointLease& l) {
    leases.push_back(l);
    return absl::OkStatus();
  };
  const CheckpointLeaseVisitor lease_visitor = on_lease;
  std::vector<std::pair<uint32_t, std::string>> states;
  auto on_state = [&](const CheckpointStateRecord& r) {
    states.emplace_back(r.kind, std::string(r.bytes));
    return absl::OkStatus();
  };
  const CheckpointStateVisitor state_visitor = on_state;
  absl::StatusOr<CheckpointLoadResult> loaded = LoadNewestValidCheckpoint(
      &fs, kDir,
      [&](const CheckpointEntry& e) {
        entries.push_back({std::string(e.key), std::string(e.value), e.create_revision, e.mod_revision,
                           e.version, e.lease});
        return absl::OkStatus();
      },
      &lease_visitor, &state_visitor);

  if (!verified.ok()) {
    FUZZ_CHECK(entries.empty() && leases.empty() && states.empty(),
               "the visitors saw %zu entries, %zu leases and %zu state records of a checkpoint that fails "
               "verification",
               entries.size(), leases.size(), states.size());
    if (verified.status().code() == absl::StatusCode::kFailedPrecondition) {
      FUZZ_CHECK(!loaded.ok() && loaded.status().code() == absl::StatusCode::kFailedPrecondition,
                 "load of another format version: %s",
                 loaded.ok() ? loaded->ToString().c_str() : loaded.status().ToString().c_str());
      return;
    }
    FUZZ_CHECK(loaded.ok(), "load failed: %s", loaded.status().ToString().c_str());
    FUZZ_CHECK(!loaded->loaded.has_value() && loaded->skipped.size() == 1 && loaded->skipped[0].path == path,
               "a damaged checkpoint was not skipped: %s", loaded->ToString().c_str());
    FUZZ_CHECK(
        !fs.GetFile(path).has_value() && fs.GetFile(loaded->skipped[0].renamed_to) == std::string(file),
        "the damaged checkpoint was not kept as %s", loaded->skipped[0].renamed_to.c_str());
    return;
  }

  FUZZ_CHECK(loaded.ok(), "a verified checkpoint fails to load: %s", loaded.status().ToString().c_str());
  FUZZ_CHECK(loaded->loaded.has_value() && loaded->loaded->path == path && loaded->skipped.empty(),
             "a verified checkpoint was not loaded: %s", loaded->ToString().c_str());
  FUZZ_CHECK(loaded->loaded->entry_count == entries.size() && verified->entry_count == entries.size(),
             "entry count %llu, visited %zu", static_cast<unsigned long long>(verified->entry_count),
             entries.size());
  FUZZ_CHECK(loaded->loaded->lease_count == leases.size() && verified->lease_count == leases.size(),
             "lease count %llu, visited %zu", static_cast<unsigned long long>(verified->lease_count),
             leases.size());
  FUZZ_CHECK(verified->revision == revision && verified->compact_revision >= 0 &&
                 verified->compact_revision <= verified->revision && verified->bytes == size,
             "verified revision %lld, compact %lld, %llu bytes", static_cast<long long>(verified->revision),
             static_cast<long long>(verified->compact_revision),
             static_cast<unsigned long long>(verified->bytes));

  FUZZ_CHECK(
      verified->compact_revision <= verified->base_revision && verified->base_revision <= verified->revision,
      "verified base revision %lld outside [compact, revision]",
      static_cast<long long>(verified->base_revision));

  // Written again by the writer, the same checkpoint has the same bytes. Only the version written today
  // can be compared so: an older version is read but never written (its header is shorter).
  if (checkpoint_format::HeaderSize(std::string_view(reinterpret_cast<const char*>(data), size))
          .value_or(0) != checkpoint_format::kHeaderBytes) {
    return;
  }
  MemoryFileSystem out;
  if (!out.CreateDirectories(kDir).ok()) std::abort();
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer = CheckpointWriter::Open(
      &out, kDir, verified->revision, verified->compact_revision, verified->base_revision);
  FUZZ_CHECK(writer.ok(), "CheckpointWriter::Open: %s", writer.status().ToString().c_str());
  for (const OwnedEntry& e : entries) {
    const absl::Status added =
        (*writer)->Add({e.key, e.value, e.create_revision, e.mod_revision, e.version, e.lease});
    FUZZ_CHECK(added.ok(), "Add: %s", added.ToString().c_str());
  }
  for (const CheckpointLease& l : leases) {
    const absl::Status added = (*writer)->AddLease(l);
    FUZZ_CHECK(added.ok(), "AddLease: %s", added.ToString().c_str());
  }
  for (const auto& [kind, bytes] : states) {
    const absl::Status added = (*writer)->AddState({kind, bytes});
    FUZZ_CHECK(added.ok(), "AddState: %s", added.ToString().c_str());
  }
  absl::StatusOr<CheckpointInfo> written = (*writer)->Finish();
  FUZZ_CHECK(written.ok(), "Finish: %s", written.status().ToString().c_str());
  FUZZ_CHECK(out.GetFile(written->path) == std::string(file),
             "the reader accepted bytes the writer does not write (%zu bytes, rewritten %llu)", size,
             static_cast<unsigned long long>(written->bytes));
}

}  // namespace
}  // namespace revkv::server::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  revkv::server::fuzz::Run(data, size);
  return 0;
}
