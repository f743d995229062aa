// WAL recovery: scan, replay, cut.
//
// Which segments are read: the log may still hold segments wholly before the checkpoint (they are removed
// by RemoveSegmentsUpTo only later, and a crash may undo part of a removal), so reading starts at the
// newest segment whose first revision is <= after_revision + 1 and never checks continuity before it.
// From there on revisions must be consecutive: each segment's name is its first record's revision, and
// every record carries the previous one's revision + 1.
//
// What ends the log: a short segment header, a record header or payload running past the end of the
// file, a length no writer would produce, a CRC mismatch, or an unexpected revision (also a segment whose
// name does not continue the previous one). Everything from that byte on is discarded: the segment is
// truncated there (or deleted if its header is the damage) and every later segment is deleted, so the
// next record is appended right after the last good one and the log never has a gap.
#include "server/wal/wal_recovery.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/wal/buffered_reader.h"
#include "server/wal/wal_format.h"

namespace revkv::server {
namespace {

using wal_format::kRecordHeaderBytes;
using wal_format::kSegmentHeaderBytes;

struct Segment {
  int64_t first_revision;
  std::string path;
};

// Where the log ends early.
struct Cut {
  size_t segment_index;
  uint64_t offset;
  std::string reason;
};

absl::StatusOr<std::vector<Segment>> ListSegments(FileSystem* fs, const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(dir);
  if (!names.ok()) return names.status();
  std::vector<Segment> segments;
  for (const std::string& name : *names) {
    if (std::optional<int64_t> first = wal_format::ParseSegmentFileName(name)) {
      segments.push_back({*first, JoinPath(dir, name)});
    }
  }
  std::sort(segments.begin(), segments.end(),
            [](const Segment& a, const Segment& b) { return a.first_revision < b.first_revision; });
  return segments;
}

// The result of reading one segment.
struct SegmentScan {
  uint64_t size = 0;
  uint64_t records = 0;
  std::optional<Cut> cut;  // segment_index filled in by the caller
};

// Reads the records of one segment, expecting `*expected` first; advances `*expected` past each good
// record and replays those after `after_revision`. I/O and visitor errors are returned; damage is
// reported in the scan's `cut`.
absl::StatusOr<SegmentScan> ScanSegment(FileSystem* fs, const Segment& segment, int64_t after_revision,
                                        int64_t* expected, WalRecordVisitor visitor,
                                        WalRecoveryReport* report) {
  SegmentScan scan;
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(segment.path);
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  scan.size = *size;
  auto cut_at = [&](uint64_t offset, std::string reason) {
    scan.cut = Cut{0, offset, std::move(reason)};
    return scan;
  };

  if (segment.first_revision != *expected) {
    return cut_at(0, absl::StrCat("segment starts at revision ", segment.first_revision, " but revision ",
                                  *expected, " comes next"));
  }
  BufferedReader reader(file->get(), scan.size);
  if (scan.size < kSegmentHeaderBytes) {
    return cut_at(
        0, absl::StrCat("segment header is torn (", scan.size, " of ", kSegmentHeaderBytes, " bytes)"));
  }
  absl::StatusOr<std::string_view> header = reader.Read(kSegmentHeaderBytes);
  if (!header.ok()) return header.status();
  if (absl::Status s = wal_format::CheckSegmentHeader(*header, segment.path); !s.ok()) {
    if (s.code() != absl::StatusCode::kDataLoss) return s;  // another format version: not damage
    return cut_at(0, std::string(s.message()));
  }

  while (reader.remaining() > 0) {
    const uint64_t offset = reader.position();
    if (reader.remaining() < kRecordHeaderBytes) {
      return cut_at(offset, absl::StrCat("torn record header (", reader.remaining(), " of ",
                                         kRecordHeaderBytes, " bytes)"));
    }
    absl::StatusOr<std::string_view> header_bytes = reader.Read(kRecordHeaderBytes);
    if (!header_bytes.ok()) return header_bytes.status();
    const wal_format::RecordHeader h = wal_format::DecodeRecordHeader(header_bytes->data());
    if (h.payload_bytes > wal_format::kMaxPayloadBytes) {
      return cut_at(offset, absl::StrCat("implausible record length ", h.payload_bytes));
    }
    if (h.payload_bytes > reader.remaining()) {
      return cut_at(offset, absl::StrCat("torn record: ", h.payload_bytes, " payload bytes announced, ",
                                         reader.remaining(), " present"));
    }
    absl::StatusOr<std::string_view> payload = reader.Read(h.payload_bytes);
    if (!payload.ok()) return payload.status();
    if (wal_format::RecordCrc(h.revision, *payload) != h.crc) {
      return cut_at(offset, absl::StrCat("bad CRC in the record expected to hold revision ", *expected));
    }
    if (h.revision != *expected) {
      return cut_at(offset, absl::StrCat("record of revision ", h.revision, " where revision ", *expected,
                                         " was expected"));
    }
    if (report->first_revision == 0) report->first_revision = h.revision;
    report->last_revision = h.revision;
    if (h.revision > after_revision) {
      if (absl::Status s = visitor(h.revision, *payload); !s.ok()) return s;
      ++report->records_replayed;
    }
    ++*expected;
    ++scan.records;
  }
  return scan;
}

// Cuts the log at `cut`: truncates (and syncs) or deletes the damaged segment, deletes the later ones,
// syncs the directory. Returns the number of segments left from `segments`.
absl::StatusOr<size_t> Repair(FileSystem* fs, const std::string& dir, const std::vector<Segment>& segments,
                              const Cut& cut, uint64_t segment_size, WalRecoveryReport* report) {
  const Segment& damaged = segments[cut.segment_index];
  size_t kept = cut.segment_index + 1;
  report->bytes_truncated = segment_size - cut.offset;
  if (cut.offset < kSegmentHeaderBytes) {
    if (absl::Status s = fs->Remove(damaged.path); !s.ok()) return s;
    report->removed_segments.push_back(damaged.path);
    kept = cut.segment_index;
  } else {
    if (absl::Status s = fs->Truncate(damaged.path, cut.offset); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->OpenWritable(damaged.path, OpenMode::kAppend);
    if (!file.ok()) return file.status();
    if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
    if (absl::Status s = (*file)->Close(); !s.ok()) return s;
  }
  for (size_t i = cut.segment_index + 1; i < segments.size(); ++i) {
    if (absl::Status s = fs->Remove(segments[i].path); !s.ok()) return s;
    report->removed_segments.push_back(segments[i].path);
  }
  if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
  return kept;
}

}  // namespace

absl::StatusOr<RecoveredLog> RecoverLog(FileSystem* fs, const std::string& dir, int64_t after_revision,
                                        WalRecordVisitor visitor, WalRecoveryReport* report) {
  *report = WalRecoveryReport{};
  report->after_revision = after_revision;
  RecoveredLog log;
  log.next_revision = after_revision + 1;

  absl::StatusOr<std::vector<Segment>> segments = ListSegments(fs, dir);
  if (!segments.ok()) return segments.status();
  if (segments->empty()) return log;

  size_t start = 0;
  for (size_t i = 0; i < segments->size(); ++i) {
    if ((*segments)[i].first_revision <= after_revision + 1) start = i;
  }
  const Segment& first = (*segments)[start];
  if (first.first_revision > after_revision + 1) {
    return absl::DataLossError(
        absl::StrCat("wal: the log in ", dir, " starts at revision ", first.first_revision, " (", first.path,
                     ") but recovery needs", " every revision after ", after_revision, "; revisions ",
                     after_revision + 1, "..", first.first_revision - 1, " are missing"));
  }

  int64_t expected = first.first_revision;
  size_t kept = segments->size();
  std::vector<SegmentScan> scans;  // scans[i - start] for each segment read
  for (size_t i = start; i < segments->size(); ++i) {
    absl::StatusOr<SegmentScan> scan =
        ScanSegment(fs, (*segments)[i], after_revision, &expected, visitor, report);
    if (!scan.ok()) return scan.status();
    ++report->segments_read;
    scans.push_back(*std::move(scan));
    if (std::optional<Cut>& cut = scans.back().cut) {
      cut->segment_index = i;
      report->corruption = WalCorruption{(*segments)[i].path, cut->offset, cut->reason};
      absl::StatusOr<size_t> left = Repair(fs, dir, *segments, *cut, scans.back().size, report);
      if (!left.ok()) return left.status();
      kept = *left;
      scans.back().size = cut->offset;
      break;
    }
  }

  for (size_t i = 0; i < kept; ++i) log.segments.push_back((*segments)[i].first_revision);
  const int64_t log_end = expected - 1;  // last revision present without a gap
  if (log_end >= after_revision) {
    log.next_revision = log_end + 1;
    // The last segment read survived if it is the last one kept; it then ends right before next_revision.
    if (kept > start) {
      const SegmentScan& last = scans[kept - 1 - start];
      log.continue_segment = (*segments)[kept - 1].first_revision;
      log.continue_segment_bytes = last.size;
      log.continue_segment_has_records = last.records > 0;
    }
  }
  // Otherwise the log ends before the checkpoint (a machine crash in a mode that acknowledges before
  // fsync, for instance): appending resumes at after_revision + 1 in a new segment, and the old segments,
  // wholly before the checkpoint, wait for RemoveSegmentsUpTo.
  return log;
}

}  // namespace revkv::server
