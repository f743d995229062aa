// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) with the real writers:
// segment files from Wal, checkpoints from CheckpointWriter, requests from the etcdserverpb messages.
// The config corpus is hand-written TOML and command lines (plus deploy/revkv.toml) and is not made here.
//
//   build/fuzz/tests/fuzz/fuzz_seed_generator tests/fuzz/corpus     (scripts/fuzz --seeds runs it)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "etcdserverpb/rpc.pb.h"
#include "server/checkpoint/checkpoint.h"
#include "server/wal/wal.h"
#include "tests/fuzz/memory_file_system.h"

namespace revkv::server::fuzz {
namespace {

void Die(const std::string& what) {
  std::cerr << "fuzz_seed_generator: " << what << "\n";
  std::exit(1);
}

void Write(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) Die("cannot write " + path.string());
}

// The segment files of a log holding `records` records (payloads of `payload_bytes` bytes), oldest first.
std::vector<std::string> MakeLog(int records, size_t payload_bytes, uint64_t segment_bytes) {
  MemoryFileSystem fs;
  WalOptions options;
  options.dir = "/wal";
  options.file_system = &fs;
  options.segment_bytes = segment_bytes;
  options.buffer_bytes = size_t{1} << 16;
  WalRecoveryReport report;
  absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
      options, 0, [](int64_t, std::string_view) { return absl::OkStatus(); }, &report);
  if (!wal.ok()) Die(wal.status().ToString());
  int64_t revision = report.next_revision;
  for (int i = 0; i < records; ++i, ++revision) {
    std::string payload(payload_bytes, static_cast<char>('a' + i % 26));
    absl::StatusOr<WalReservation> r = (*wal)->Reserve(payload);
    if (!r.ok()) Die(r.status().ToString());
    const WalLsn lsn = (*wal)->Append(*r, revision, payload);
    (*wal)->Notify();
    if (absl::Status s = (*wal)->WaitDurable(lsn); !s.ok()) Die(s.ToString());
  }
  if (absl::Status s = (*wal)->Close(); !s.ok()) Die(s.ToString());
  std::vector<std::string> segments;
  for (const auto& [path, bytes] : fs.Files()) segments.push_back(bytes);  // names sort by revision
  return segments;
}

// The wal_recovery target's input: control byte (bit 0: two segments, bits 1..4: checkpoint revision).
std::string WalInput(const std::vector<std::string>& segments, int after_revision) {
  std::string input(1, static_cast<char>((after_revision << 1) | (segments.size() > 1 ? 1 : 0)));
  if (segments.size() > 1) {
    const size_t split = segments[0].size();
    input += static_cast<char>(split & 0xff);
    input += static_cast<char>(split >> 8);
  }
  for (size_t i = 0; i < segments.size() && i < 2; ++i) input += segments[i];
  return input;
}

std::string MakeCheckpoint(int64_t revision, int64_t compact_revision, int entries, int leases = 0,
                           int states = 0) {
  MemoryFileSystem fs;
  if (!fs.CreateDirectories("/ckpt").ok()) Die("mkdir");
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer =
      CheckpointWriter::Open(&fs, "/ckpt", revision, compact_revision);
  if (!writer.ok()) Die(writer.status().ToString());
  for (int i = 0; i < entries; ++i) {
    const std::string key = "key/" + std::to_string(i);
    const std::string value(static_cast<size_t>(i) * 3, 'v');
    const int64_t lease = leases > 0 ? i % leases + 1 : 0;
    if (absl::Status s = (*writer)->Add({key, value, i + 1, i + 2, 2, lease}); !s.ok()) Die(s.ToString());
  }
  for (int i = 0; i < leases; ++i) {
    if (absl::Status s = (*writer)->AddLease({i + 1, 10 * (i + 1)}); !s.ok()) Die(s.ToString());
  }
  for (int i = 0; i < states; ++i) {
    const std::string bytes(static_cast<size_t>(i) * 5, 's');
    if (absl::Status s = (*writer)->AddState({static_cast<uint32_t>(i + 1), bytes}); !s.ok())
      Die(s.ToString());
  }
  absl::StatusOr<CheckpointInfo> info = (*writer)->Finish();
  if (!info.ok()) Die(info.status().ToString());
  return *fs.GetFile(info->path);
}

// The store_request target's input: kind byte (0 Range, 1 Put, 2 DeleteRange, 3 Txn, 4 Compaction),
// then the message.
std::string Request(char kind, const google::protobuf::Message& message) {
  return std::string(1, kind) + message.SerializeAsString();
}

void Generate(const std::filesystem::path& corpus) {
  const std::filesystem::path wal = corpus / "wal_recovery";
  Write(wal / "one_segment", WalInput(MakeLog(5, 12, 1 << 20), 0));
  Write(wal / "one_segment_after_3", WalInput(MakeLog(5, 12, 1 << 20), 3));
  Write(wal / "two_segments", WalInput(MakeLog(6, 20, 64), 0));
  Write(wal / "two_segments_after_2", WalInput(MakeLog(6, 20, 64), 2));
  Write(wal / "header_only", WalInput(MakeLog(0, 0, 1 << 20), 0));
  Write(wal / "large_record", WalInput(MakeLog(2, 1500, 1 << 20), 0));

  const std::filesystem::path ckpt = corpus / "checkpoint";
  Write(ckpt / "empty", MakeCheckpoint(1, 0, 0));
  Write(ckpt / "three_entries", MakeCheckpoint(9, 0, 3));
  Write(ckpt / "compacted", MakeCheckpoint(40, 30, 5));
  Write(ckpt / "leases", MakeCheckpoint(12, 0, 4, 2));
  Write(ckpt / "state_records", MakeCheckpoint(14, 0, 3, 1, 2));

  const std::filesystem::path req = corpus / "store_request";
  {
    etcdserverpb::RangeRequest r;
    r.set_key("a");
    r.set_range_end("zz");
    Write(req / "range_all", Request(0, r));
    r.set_limit(2);
    r.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
    r.set_sort_target(etcdserverpb::RangeRequest::MOD);
    Write(req / "range_sorted_limit", Request(0, r));
    etcdserverpb::RangeRequest past;
    past.set_key("b");
    past.set_revision(3);
    Write(req / "range_past", Request(0, past));
  }
  {
    etcdserverpb::PutRequest p;
    p.set_key("foo");
    p.set_value("bar");
    p.set_prev_kv(true);
    Write(req / "put", Request(1, p));
    p.set_ignore_value(true);
    p.clear_value();
    Write(req / "put_ignore_value", Request(1, p));
  }
  {
    etcdserverpb::DeleteRangeRequest d;
    d.set_key("foo");
    d.set_range_end("foo0");
    d.set_prev_kv(true);
    Write(req / "delete_prefix", Request(2, d));
  }
  {
    etcdserverpb::TxnRequest t;
    etcdserverpb::Compare* c = t.add_compare();
    c->set_key("a");
    c->set_target(etcdserverpb::Compare::VERSION);
    c->set_result(etcdserverpb::Compare::EQUAL);
    c->set_version(1);
    etcdserverpb::PutRequest* put = t.add_success()->mutable_request_put();
    put->set_key("a");
    put->set_value("next");
    t.add_success()->mutable_request_range()->set_key("b");
    etcdserverpb::RangeRequest* past = t.add_success()->mutable_request_range();
    past->set_key("foo/1");
    past->set_revision(4);
    t.add_failure()->mutable_request_delete_range()->set_key("b");
    etcdserverpb::TxnRequest* nested = t.add_failure()->mutable_request_txn();
    nested->add_success()->mutable_request_put()->set_key("n");
    Write(req / "txn", Request(3, t));
  }
  {
    etcdserverpb::CompactionRequest c;
    c.set_revision(4);
    Write(req / "compact", Request(4, c));
  }
}

}  // namespace
}  // namespace revkv::server::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seed_generator <corpus dir>\n";
    return 2;
  }
  revkv::server::fuzz::Generate(argv[1]);
  return 0;
}
