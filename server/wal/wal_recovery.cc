// WAL recovery: scan, replay, and either cut a torn tail or refuse the log.
//
// Which segments are read: the log may still hold segments wholly before the checkpoint (they are removed
// by RemoveSegmentsUpTo only later, and a crash may undo part of a removal), so reading starts at the
// newest segment whose first revision is <= after_revision + 1 and never looks before it. From there on
// revisions must be consecutive: each segment's name is its first record's revision, and every record
// carries the previous one's revision + 1.
//
// The one rule: only what a crash can leave is repaired automatically, and only where a crash leaves it.
// A crash during an append leaves the newest segment ending in a torn tail; nothing a crash does can damage
// a record that was followed by a completed fdatasync, so damage anywhere else is damage of acknowledged
// data, and recovery stops with an error rather than guess. A torn tail (in the newest segment only) is
// one of:
//   - fewer than 16 bytes where a record header should be (a write cut short);
//   - a record whose announced length runs past the end of the file, unless some prefix of the bytes
//     present makes a complete valid record (then the length field is damaged), its header names another
//     revision than the expected one or a length above kMaxPayloadBytes (which no writer writes) without an
//     unwritten sector holding part of it (a whole aligned sector of zeros, or a zero tail to the end of
//     the file: a crash does not rewrite header bytes), or a valid record of a later revision starts
//     anywhere after it (then the records after it are real and the length is damaged). What remains
//     ambiguous: a length damaged to another value a record can have, with the record's own payload and
//     every record after it damaged too, reads exactly like a write cut short, and is cut (kept in
//     "<segment>.broken");
//   - a complete record that fails its CRC and has an aligned 512-byte sector (or the part of one it
//     occupies) that is all zeros: a sector that never reached the disk (the file's size was written back
//     before its data, or the space was preallocated). A power loss may keep later unsynced pages and lose
//     earlier ones, so records after it are discarded too: none of them was synced. An all-zero header is
//     such a record;
//   - a newest segment whose 16-byte header is short or all zeros (its creation was cut short: an fsync
//     of any of its records would have made the header durable too).
// A CRC mismatch without a zero sector (bytes present but wrong), a bad segment header, a revision out of
// sequence or a segment name that does not continue the log is damage wherever it is. This follows etcd's
// WAL, which repairs only an unexpected end of file in the last segment (a zero sector there counting as
// one) and refuses a CRC mismatch.
//
// The floor: the caller may say through which revision the log is known to have been synced (the
// engine: the newest usable checkpoint's revision, the compaction record's). A tear at or below it is
// damage, and a log that ends before it is refused; nothing is cut then. What is cut as a torn tail is
// first copied to "<segment>.broken", so a cut never destroys evidence.
//
// Records at or below after_revision (covered by the checkpoint) never decide the fate of later ones: a
// covered record that fails its checks is passed over if the record of the next revision is found after
// it in its segment (where its length says, else by a bounded search that also requires the record after
// the one found: FindNextRecord), or, that one being damaged too, the record of the revision after it,
// and so on up to the first revision the checkpoint does not cover (at most kMaxDamagedCoveredInARow
// records in a row); or if nothing follows it in its segment (it is the segment's last record); only
// otherwise is the damage judged as above.
#include "server/wal/wal_recovery.h"

#include <string.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/wal/buffered_reader.h"
#include "server/wal/crc32c.h"
#include "server/wal/wal_format.h"

namespace revkv::server {
namespace {

using wal_format::kRecordHeaderBytes;
using wal_format::kSegmentHeaderBytes;

// The unit a disk writes atomically; a crash leaves each such sector old (zeros here) or new.
constexpr uint64_t kSectorBytes = 512;

struct Segment {
  int64_t first_revision;
  std::string path;
};

// Where the log stops being readable.
struct Damage {
  size_t segment_index = 0;
  uint64_t offset = 0;   // byte offset of the bad record (0: the segment itself)
  int64_t revision = 0;  // the revision the bad record was expected to hold
  std::string reason;
  bool torn = false;  // a torn tail of the newest segment: recovery may cut it
};

// The result of reading one segment.
struct SegmentScan {
  uint64_t size = 0;
  uint64_t records = 0;
  // The segment's last record was damaged, covered, and passed over: no record may be appended after it.
  bool ends_in_covered_damage = false;
  std::optional<Damage> damage;  // segment_index filled in by the caller
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

// Bytes [from, to) of `file` (a failure path: read whole).
absl::StatusOr<std::string> ReadRange(const ReadableFile& file, uint64_t from, uint64_t to) {
  std::string bytes(to > from ? to - from : 0, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    absl::StatusOr<size_t> n = file.ReadAt(from + done, bytes.data() + done, bytes.size() - done);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    done += *n;
  }
  bytes.resize(done);
  return bytes;
}

// A record that passes its CRC, found by searching.
struct FoundRecord {
  uint64_t offset;
  int64_t revision;
};

// The first position in `bytes` (file offset `base`) where a complete record with a matching CRC and a
// revision in [min_revision, max_revision] starts; with `highest`, the one with the highest revision.
std::optional<FoundRecord> FindRecord(std::string_view bytes, uint64_t base, int64_t min_revision,
                                      int64_t max_revision, bool highest = false) {
  std::optional<FoundRecord> found;
  for (size_t pos = 0; pos + kRecordHeaderBytes <= bytes.size(); ++pos) {
    const wal_format::RecordHeader h = wal_format::DecodeRecordHeader(bytes.data() + pos);
    if (h.revision < min_revision || h.revision > max_revision) continue;
    if (h.payload_bytes > bytes.size() - pos - kRecordHeaderBytes) continue;
    if (wal_format::RecordCrc(h.revision, bytes.substr(pos + kRecordHeaderBytes, h.payload_bytes)) != h.crc) {
      continue;
    }
    if (!highest) return FoundRecord{base + pos, h.revision};
    if (!found || h.revision > found->revision) found = FoundRecord{base + pos, h.revision};
  }
  return found;
}

// The length L <= bytes.size() for which the first L bytes of `bytes` are the payload of the record of
// `revision` with checksum `crc`, if there is one (the shortest). One pass over the bytes.
std::optional<uint64_t> CompletingLength(int64_t revision, uint32_t crc, std::string_view bytes) {
  uint32_t running = wal_format::RevisionCrc(revision);
  for (size_t length = 0;; ++length) {
    if (running == crc) return length;
    if (length == bytes.size()) return std::nullopt;
    running = Crc32cExtend(running, bytes.data() + length, 1);
  }
}

// What the search for the record after a damaged covered one may cost: one memmem pass over the rest of
// the segment for the 8 revision bytes it needs, plus the CRC of the candidates that pass the cheap
// checks, at most kSearchCrcBudgetFactor times the bytes searched plus kSearchCrcBudgetSlack. A search
// that runs out of budget has found nothing (the damage is then judged as if no record followed).
constexpr uint64_t kSearchCrcBudgetFactor = 4;
constexpr uint64_t kSearchCrcBudgetSlack = uint64_t{1} << 20;
// A run of damaged covered records is passed over only up to this many records in a row: the search for
// each further revision is one more memmem pass over the rest of the segment (the CRC budget is shared).
constexpr int64_t kMaxDamagedCoveredInARow = 16;

uint64_t SearchCrcBudget(uint64_t bytes) { return kSearchCrcBudgetFactor * bytes + kSearchCrcBudgetSlack; }

// The length of the record whose header at `pos` of `bytes` names exactly `revision` and whose payload
// lies inside `bytes`, if there is one (its CRC is not checked: cheap).
std::optional<uint64_t> HeaderAt(std::string_view bytes, size_t pos, int64_t revision) {
  if (pos > bytes.size() || bytes.size() - pos < kRecordHeaderBytes) return std::nullopt;
  const wal_format::RecordHeader h = wal_format::DecodeRecordHeader(bytes.data() + pos);
  if (h.revision != revision || h.payload_bytes > bytes.size() - pos - kRecordHeaderBytes)
    return std::nullopt;
  return kRecordHeaderBytes + h.payload_bytes;
}

// Whether the record at `pos` of `bytes` (whose header HeaderAt accepted) passes its CRC; adds the bytes
// it checksums to `*crc_bytes`.
bool CrcHoldsAt(std::string_view bytes, size_t pos, uint64_t* crc_bytes) {
  const wal_format::RecordHeader h = wal_format::DecodeRecordHeader(bytes.data() + pos);
  *crc_bytes += h.payload_bytes;
  return wal_format::RecordCrc(h.revision, bytes.substr(pos + kRecordHeaderBytes, h.payload_bytes)) == h.crc;
}

// After the damaged covered record at the start of `rest` (file offset `base`), the record of exactly
// `revision` (one after the damaged one: the caller tries the nearest first) where the log continues, if
// it can be found; adds the bytes it checksums to `*crc_bytes_used`, which the caller shares across
// revisions:
//   1. where the damaged record's own length field says the next record starts (a damaged payload or
//      CRC leaves the length intact: one check);
//   2. else by searching the rest of the segment for the 8 bytes of `revision` where a record header
//      holds its revision. A candidate must be followed by the end of the segment or by a header of
//      `revision` + 1 (checked first: cheap), pass its CRC, and the record after it must pass its CRC
//      too: a record-shaped byte string inside a value (a planted record) is followed by the rest of
//      that value, not by the next record.
// Not searched: a damaged record whose length field makes it end exactly at the end of the segment (it is
// the segment's last record; anything record-shaped inside it is part of its value). Bounded as the
// budget above says.
std::optional<FoundRecord> FindNextRecord(std::string_view rest, uint64_t base,
                                          const std::optional<wal_format::RecordHeader>& damaged,
                                          int64_t revision, uint64_t* crc_bytes_used) {
  uint64_t& crc_bytes = *crc_bytes_used;
  if (damaged && damaged->payload_bytes <= rest.size() - kRecordHeaderBytes) {
    const size_t next = kRecordHeaderBytes + damaged->payload_bytes;
    if (next == rest.size()) return std::nullopt;
    if (HeaderAt(rest, next, revision) && CrcHoldsAt(rest, next, &crc_bytes)) {
      return FoundRecord{base + next, revision};
    }
  }
  const uint64_t budget = SearchCrcBudget(rest.size());
  char pattern[8];
  std::memcpy(pattern, &revision, sizeof pattern);
  // A header's revision is at its bytes 8..15; the damaged record itself starts at 0.
  size_t from = 1 + 8;
  while (from + sizeof pattern <= rest.size() && crc_bytes <= budget) {
    const void* hit = memmem(rest.data() + from, rest.size() - from, pattern, sizeof pattern);
    if (hit == nullptr) break;
    const size_t at = static_cast<size_t>(static_cast<const char*>(hit) - rest.data());
    from = at + 1;
    const size_t pos = at - 8;
    const std::optional<uint64_t> length = HeaderAt(rest, pos, revision);
    if (!length) continue;
    const size_t after = pos + *length;
    if (after == rest.size()) {
      if (CrcHoldsAt(rest, pos, &crc_bytes)) return FoundRecord{base + pos, revision};
      continue;
    }
    if (!HeaderAt(rest, after, revision + 1)) continue;
    if (CrcHoldsAt(rest, pos, &crc_bytes) && CrcHoldsAt(rest, after, &crc_bytes)) {
      return FoundRecord{base + pos, revision};
    }
  }
  return std::nullopt;
}

// Whether the damaged covered record at the start of `rest` is the last thing in its segment: its
// length field makes it end exactly at the end of the segment, or (a damaged length) its bytes up to the
// end of the segment are the record with its CRC.
bool DamagedRecordEndsTheSegment(std::string_view rest, const std::optional<wal_format::RecordHeader>& h,
                                 int64_t revision) {
  if (!h) return false;
  if (h->payload_bytes == rest.size() - kRecordHeaderBytes) return true;
  const std::optional<uint64_t> length = CompletingLength(revision, h->crc, rest.substr(kRecordHeaderBytes));
  return length && *length == rest.size() - kRecordHeaderBytes;
}

// Whether a sector holding some of the record at the start of `rest` (the bytes from file offset
// `offset` to the end of the file) may never have been written: some sector's bytes from
// the record's start (or the sector's start) to the sector's end (or the file's end) are all zeros, for
// a sector holding some of the record's first `within` bytes. Each sector is judged with every byte of
// it in the file after the record's start: a part of the record that shares its sector with non-zero
// bytes after it was written with them, and its zeros are data. A first part whose sector begins with
// the record before it (or the segment header) counts when it is zero to the sector's end: that sector
// may hold the earlier bytes from an earlier fdatasync and never have received this record's (a disk
// writes a sector whole, old or new).
bool HasUnwrittenSector(std::string_view rest, uint64_t offset, size_t within) {
  size_t pos = 0;
  while (pos < rest.size() && pos < within) {
    const uint64_t file_pos = offset + pos;
    const size_t chunk =
        static_cast<size_t>(std::min<uint64_t>(kSectorBytes - file_pos % kSectorBytes, rest.size() - pos));
    const std::string_view part = rest.substr(pos, chunk);
    if (std::all_of(part.begin(), part.end(), [](char c) { return c == '\0'; })) return true;
    pos += chunk;
  }
  return false;
}

// Reads the records of segments[index], expecting `*expected` first; advances `*expected` past each good
// record and replays those after `after_revision`. I/O and visitor errors are returned; damage is
// reported in the scan's `damage`.
absl::StatusOr<SegmentScan> ScanSegment(FileSystem* fs, const std::vector<Segment>& segments, size_t index,
                                        int64_t after_revision, int64_t* expected, WalRecordVisitor visitor,
                                        WalRecoveryReport* report) {
  const Segment& segment = segments[index];
  const bool newest = index + 1 == segments.size();
  SegmentScan scan;
  absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(segment.path);
  if (!file.ok()) return file.status();
  absl::StatusOr<uint64_t> size = (*file)->Size();
  if (!size.ok()) return size.status();
  scan.size = *size;
  auto damaged = [&](uint64_t offset, std::string reason, bool torn) {
    scan.damage = Damage{index, offset, *expected, std::move(reason), torn && newest};
    return scan;
  };

  if (segment.first_revision != *expected) {
    return damaged(
        0,
        absl::StrCat("the segment's name says it starts at revision ", segment.first_revision,
                     " but revision ", *expected, " comes next (a segment is missing or misnamed)"),
        /*torn=*/false);
  }
  BufferedReader reader(file->get(), scan.size);
  if (scan.size < kSegmentHeaderBytes) {
    return damaged(
        0, absl::StrCat("segment header is torn (", scan.size, " of ", kSegmentHeaderBytes, " bytes)"),
        /*torn=*/true);
  }
  absl::StatusOr<std::string_view> header = reader.Read(kSegmentHeaderBytes);
  if (!header.ok()) return header.status();
  if (absl::Status s = wal_format::CheckSegmentHeader(*header, segment.path); !s.ok()) {
    if (s.code() != absl::StatusCode::kDataLoss) return s;  // another format version: not damage
    const bool zero = std::all_of(header->begin(), header->end(), [](char c) { return c == '\0'; });
    return damaged(0, zero ? "segment header was never written (all zeros)" : std::string(s.message()), zero);
  }

  while (reader.remaining() > 0) {
    const uint64_t offset = reader.position();
    // 1. Read what is there: a header, and the payload if it is all present.
    std::optional<wal_format::RecordHeader> h;
    std::string_view payload;
    bool complete = false;
    if (reader.remaining() >= kRecordHeaderBytes) {
      absl::StatusOr<std::string_view> header_bytes = reader.Read(kRecordHeaderBytes);
      if (!header_bytes.ok()) return header_bytes.status();
      h = wal_format::DecodeRecordHeader(header_bytes->data());
      if (h->payload_bytes <= wal_format::kMaxPayloadBytes && h->payload_bytes <= reader.remaining()) {
        absl::StatusOr<std::string_view> read = reader.Read(h->payload_bytes);
        if (!read.ok()) return read.status();
        payload = *read;
        complete = true;
      }
    }
    const bool crc_ok = complete && wal_format::RecordCrc(h->revision, payload) == h->crc;
    if (crc_ok && h->revision == *expected) {
      if (report->first_revision == 0) report->first_revision = h->revision;
      report->last_revision = h->revision;
      if (h->revision > after_revision) {
        if (absl::Status s = visitor(h->revision, payload); !s.ok()) return s;
        ++report->records_replayed;
      }
      ++*expected;
      ++scan.records;
      continue;
    }
    if (crc_ok) {
      return damaged(
          offset,
          absl::StrCat("record of revision ", h->revision, " where revision ", *expected, " was expected"),
          /*torn=*/false);
    }

    // 2. A record that fails its checks. A covered one is passed over if the next record needed can be
    // found after it.
    absl::StatusOr<std::string> rest = ReadRange(**file, offset, scan.size);
    if (!rest.ok()) return rest.status();
    if (*expected <= after_revision) {
      auto note_covered = [&](std::string reason) {
        ++report->covered_records_skipped;
        if (!report->covered_damage) {
          report->covered_damage = WalCorruption{segment.path, offset, std::move(reason)};
        }
      };
      const std::string why = complete ? absl::StrCat("bad CRC in the record of revision ", *expected)
                                       : absl::StrCat("broken framing of the record of revision ", *expected);
      // The record of the next revision, else (it is damaged too) of the one after it, and so on up to
      // the first revision the checkpoint does not cover, for at most kMaxDamagedCoveredInARow records.
      uint64_t crc_bytes = 0;
      std::optional<FoundRecord> next;
      const int64_t last_candidate = std::min(after_revision + 1, *expected + kMaxDamagedCoveredInARow);
      for (int64_t candidate = *expected + 1;
           !next && candidate <= last_candidate && crc_bytes <= SearchCrcBudget(rest->size()); ++candidate) {
        next = FindNextRecord(*rest, offset, h, candidate, &crc_bytes);
      }
      if (next) {
        for (int64_t skipped = *expected; skipped < next->revision; ++skipped) note_covered(why);
        *expected = next->revision;
        reader.Seek(next->offset);
        continue;
      }
      // The damaged record is the last one of its segment: nothing after it in the segment is lost. The
      // log continues in the next segment (which must start at the revision after it), or, in the newest
      // segment, ends here and appending starts a new segment (the damaged one is left as it is).
      if (DamagedRecordEndsTheSegment(*rest, h, *expected)) {
        note_covered(absl::StrCat(why, ", the last record of its segment"));
        ++*expected;
        scan.ends_in_covered_damage = true;
        return scan;
      }
    }

    // 3. Otherwise it ends the log: a torn tail if a crash can explain it, damage if not.
    if (!h) {
      return damaged(
          offset, absl::StrCat("torn record header (", rest->size(), " of ", kRecordHeaderBytes, " bytes)"),
          /*torn=*/true);
    }
    if (!complete) {
      const uint64_t present = rest->size() - kRecordHeaderBytes;
      const std::string_view present_bytes = std::string_view(*rest).substr(kRecordHeaderBytes);
      // A crash cuts bytes off or leaves sectors unwritten; it does not change the header bytes that are
      // there. A header that names another revision is damage unless a sector holding some of it was
      // never written: a whole aligned sector of zeros, or an all-zero tail running to the end of the
      // file. Zero header bytes that share their sector with non-zero bytes after them were written
      // with those bytes (a small revision's high bytes are zeros).
      if (h->revision != *expected && !HasUnwrittenSector(*rest, offset, kRecordHeaderBytes)) {
        return damaged(offset,
                       absl::StrCat("damaged record header: it announces revision ", h->revision, " and ",
                                    h->payload_bytes, " payload bytes, past the end of the file"),
                       /*torn=*/false);
      }
      // Nor is a length no writer can have written (above kMaxPayloadBytes, which bounds every record a
      // Wal appends) torn, unless a sector of the header was never written: the header is as written, and
      // this one was not. Such a record is damage even when nothing intact follows it.
      if (h->payload_bytes > wal_format::kMaxPayloadBytes &&
          !HasUnwrittenSector(*rest, offset, kRecordHeaderBytes)) {
        return damaged(
            offset,
            absl::StrCat("damaged record header: it announces ", h->payload_bytes,
                         " payload bytes, more than a record can hold (", wal_format::kMaxPayloadBytes, ")"),
            /*torn=*/false);
      }
      // The record may be whole with a damaged length: some prefix of what follows passes the CRC.
      if (std::optional<uint64_t> length = CompletingLength(*expected, h->crc, present_bytes)) {
        return damaged(offset,
                       absl::StrCat("damaged length: the record is complete with ", *length,
                                    " payload bytes but announces ", h->payload_bytes),
                       /*torn=*/false);
      }
      if (std::optional<FoundRecord> later = FindRecord(std::string_view(*rest).substr(1), offset + 1,
                                                        *expected + 1, std::numeric_limits<int64_t>::max())) {
        return damaged(offset,
                       absl::StrCat("damaged length: the record announces ", h->payload_bytes,
                                    " payload bytes, past the end of the file, but the record of revision ",
                                    later->revision, " follows at offset ", later->offset),
                       /*torn=*/false);
      }
      return damaged(
          offset,
          absl::StrCat("torn record: ", h->payload_bytes, " payload bytes announced, ", present, " present"),
          /*torn=*/true);
    }
    // The sectors holding the record are judged whole, with the bytes after the record in its last
    // sector: a last part followed by zeros to the sector's end (or the file's) lies in an unwritten
    // sector too.
    if (HasUnwrittenSector(*rest, offset, kRecordHeaderBytes + h->payload_bytes)) {
      return damaged(offset,
                     absl::StrCat("torn record: the record expected to hold revision ", *expected,
                                  " has an unwritten (all-zero) sector"),
                     /*torn=*/true);
    }
    return damaged(offset, absl::StrCat("bad CRC in the record expected to hold revision ", *expected),
                   /*torn=*/false);
  }
  return scan;
}

// The log as read: the segments from `start` on, each one's scan, and where reading stopped.
struct LogScan {
  std::vector<Segment> segments;
  size_t start = 0;
  std::vector<SegmentScan> scans;  // scans[i - start] for each segment read
  int64_t expected = 1;            // the revision after the last good record
  std::optional<Damage> damage;
};

absl::StatusOr<LogScan> ScanLog(FileSystem* fs, const std::string& dir, int64_t after_revision,
                                WalRecordVisitor visitor, WalRecoveryReport* report) {
  LogScan log;
  absl::StatusOr<std::vector<Segment>> segments = ListSegments(fs, dir);
  if (!segments.ok()) return segments.status();
  log.segments = *std::move(segments);
  log.expected = after_revision + 1;
  if (log.segments.empty()) return log;

  for (size_t i = 0; i < log.segments.size(); ++i) {
    if (log.segments[i].first_revision <= after_revision + 1) log.start = i;
  }
  const Segment& first = log.segments[log.start];
  if (first.first_revision > after_revision + 1) {
    return absl::DataLossError(
        absl::StrCat("wal: the log in ", dir, " starts at revision ", first.first_revision, " (", first.path,
                     ") but recovery needs", " every revision after ", after_revision, "; revisions ",
                     after_revision + 1, "..", first.first_revision - 1, " are missing"));
  }
  log.expected = first.first_revision;
  for (size_t i = log.start; i < log.segments.size(); ++i) {
    absl::StatusOr<SegmentScan> scan =
        ScanSegment(fs, log.segments, i, after_revision, &log.expected, visitor, report);
    if (!scan.ok()) return scan.status();
    ++report->segments_read;
    log.scans.push_back(*std::move(scan));
    if (log.scans.back().damage) {
      log.damage = log.scans.back().damage;
      break;
    }
  }
  return log;
}

// The error for damage recovery does not repair. `durable_through`: the revision the log is known to
// have been synced through (0: none known); a repair that cuts the log before it cannot help alone.
absl::Status DamageError(const LogScan& log, const Damage& damage, const std::string& dir,
                         int64_t durable_through) {
  std::string advice;
  if (damage.revision - 1 < durable_through) {
    advice = absl::StrCat(
        "Restore the file from a copy. `revkv-server --repair-wal` would keep only revisions up to ",
        damage.revision - 1, ", but revision ", durable_through,
        " was made durable before (a checkpoint or the compaction record needs it): after such a repair "
        "the server still refuses to start unless an older checkpoint and the log reach that far, and "
        "every revision from ",
        damage.revision, " on is lost");
  } else {
    advice = absl::StrCat(
        "Restore the file from a copy, or run `revkv-server --repair-wal` to move the damaged part aside "
        "and keep revisions up to ",
        damage.revision - 1, " (later ones are then lost)");
  }
  return absl::DataLossError(absl::StrCat(
      "wal: the log in ", dir, " is damaged: ", log.segments[damage.segment_index].path, " at byte offset ",
      damage.offset, " (where revision ", damage.revision, " should be): ", damage.reason,
      ". Only a torn tail of the newest segment after the last revision known to be synced is repaired "
      "automatically; nothing was changed. ",
      advice));
}

// Copies `from` whole to `to` and syncs the copy (not the directory).
absl::Status CopyFile(FileSystem* fs, const std::string& from, const std::string& to) {
  absl::StatusOr<std::unique_ptr<ReadableFile>> in = fs->OpenReadable(from);
  if (!in.ok()) return in.status();
  absl::StatusOr<uint64_t> size = (*in)->Size();
  if (!size.ok()) return size.status();
  absl::StatusOr<std::unique_ptr<WritableFile>> out = fs->OpenWritable(to, OpenMode::kTruncate);
  if (!out.ok()) return out.status();
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  for (uint64_t pos = 0; pos < *size; pos += kChunk) {
    absl::StatusOr<std::string> bytes = ReadRange(**in, pos, std::min(*size, pos + kChunk));
    if (!bytes.ok()) return bytes.status();
    if (absl::Status s = (*out)->Append(*bytes); !s.ok()) return s;
  }
  if (absl::Status s = (*out)->Sync(); !s.ok()) return s;
  return (*out)->Close();
}

// A free name for the part of `path` kept aside: <path><suffix>, or <path><suffix>.1, .2, ...
absl::StatusOr<std::string> AsideName(FileSystem* fs, const std::string& path,
                                      const std::string& suffix = ".damaged") {
  for (int n = 0; n < 1000; ++n) {
    std::string candidate = path + suffix + (n == 0 ? std::string() : absl::StrCat(".", n));
    absl::StatusOr<std::unique_ptr<ReadableFile>> existing = fs->OpenReadable(candidate);
    if (absl::IsNotFound(existing.status())) return candidate;
    if (!existing.ok()) return existing.status();
  }
  return absl::AlreadyExistsError(absl::StrCat("wal: no free name to keep ", path, " aside"));
}

// Cuts a torn tail, keeping what it cuts: copies the newest segment whole to "<segment>.broken" (as etcd
// keeps wal.broken; the offsets reported hold in the copy) and then truncates (and syncs) the segment
// at the torn record, or renames the segment to "<segment>.broken" if its header is torn; syncs the
// directory before the segment loses anything. Returns the number of segments left.
absl::StatusOr<size_t> CutTornTail(FileSystem* fs, const std::string& dir, const LogScan& log,
                                   WalRecoveryReport* report) {
  const Damage& damage = *log.damage;
  const Segment& segment = log.segments[damage.segment_index];
  report->corruption = WalCorruption{segment.path, damage.offset, damage.reason};
  report->bytes_truncated = log.scans.back().size - damage.offset;
  absl::StatusOr<std::string> broken = AsideName(fs, segment.path, ".broken");
  if (!broken.ok()) return broken.status();
  report->broken_copy = *broken;
  if (damage.offset < kSegmentHeaderBytes) {
    if (absl::Status s = fs->Rename(segment.path, *broken); !s.ok()) return s;
    report->removed_segments.push_back(segment.path);
    if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
    return damage.segment_index;
  }
  if (absl::Status s = CopyFile(fs, segment.path, *broken); !s.ok()) return s;
  if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;  // the copy's name before the cut
  if (absl::Status s = fs->Truncate(segment.path, damage.offset); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->OpenWritable(segment.path, OpenMode::kAppend);
  if (!file.ok()) return file.status();
  if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
  if (absl::Status s = (*file)->Close(); !s.ok()) return s;
  return damage.segment_index + 1;
}

}  // namespace

absl::StatusOr<RecoveredLog> RecoverLog(FileSystem* fs, const std::string& dir, int64_t after_revision,
                                        int64_t durable_through, WalRecordVisitor visitor,
                                        WalRecoveryReport* report) {
  *report = WalRecoveryReport{};
  report->after_revision = after_revision;
  RecoveredLog recovered;
  recovered.next_revision = after_revision + 1;

  absl::StatusOr<LogScan> scanned = ScanLog(fs, dir, after_revision, visitor, report);
  if (!scanned.ok()) return scanned.status();
  const LogScan& log = *scanned;
  if (log.segments.empty()) return recovered;

  // The log was synced through durable_through (every checkpoint and every compaction record syncs it
  // first), so it must reach that far, and nothing at or below it can be a crash's torn tail: such a
  // finding is damage, refused before anything is cut.
  if (log.expected - 1 < durable_through) {
    if (log.damage) {
      Damage damage = *log.damage;
      damage.torn = false;
      absl::StrAppend(&damage.reason, ", at or below revision ", durable_through,
                      ", which was synced before: not a torn tail a crash can leave");
      return DamageError(log, damage, dir, durable_through);
    }
    return absl::DataLossError(absl::StrCat(
        "wal: the log in ", dir, " ends at revision ", log.expected - 1, ", but revision ", durable_through,
        " was synced before (a checkpoint or the compaction record needs it); the log is missing records. "
        "Nothing was changed"));
  }
  size_t kept = log.segments.size();
  uint64_t last_size = log.scans.back().size;
  if (log.damage) {
    if (!log.damage->torn) return DamageError(log, *log.damage, dir, durable_through);
    absl::StatusOr<size_t> left = CutTornTail(fs, dir, log, report);
    if (!left.ok()) return left.status();
    kept = *left;
    last_size = log.damage->offset;
  }

  for (size_t i = 0; i < kept; ++i) recovered.segments.push_back(log.segments[i].first_revision);
  const int64_t log_end = log.expected - 1;  // last revision present without a gap
  if (log_end >= after_revision) {
    recovered.next_revision = log_end + 1;
    // The last segment read survived if it is the last one kept; it then ends right before next_revision.
    if (kept > log.start &&
        !(kept - log.start == log.scans.size() && log.scans.back().ends_in_covered_damage)) {
      recovered.continue_segment = log.segments[kept - 1].first_revision;
      recovered.continue_segment_bytes =
          kept - log.start == log.scans.size() ? last_size : log.scans[kept - 1 - log.start].size;
      recovered.continue_segment_has_records = log.scans[kept - 1 - log.start].records > 0;
    }
  }
  // Otherwise the log ends before the checkpoint (a machine crash in a mode that acknowledges before
  // fsync, for instance): appending resumes at after_revision + 1 in a new segment, and the old segments,
  // wholly before the checkpoint, wait for RemoveSegmentsUpTo.
  return recovered;
}

namespace {

// One pass of RepairWal: reads the log as Open does and moves aside everything from its first damage on.
// The report's `damage` is unset if the log as read is intact.
absl::StatusOr<WalRepairReport> RepairPass(FileSystem* fs, const std::string& dir, int64_t after_revision) {
  WalRepairReport repair;
  WalRecoveryReport scan_report;
  scan_report.after_revision = after_revision;
  absl::StatusOr<LogScan> scanned = ScanLog(
      fs, dir, after_revision, [](int64_t, std::string_view) { return absl::OkStatus(); }, &scan_report);
  if (!scanned.ok()) return scanned.status();
  const LogScan& log = *scanned;
  repair.last_good_revision = log.expected - 1;
  if (!log.damage) return repair;

  const Damage& damage = *log.damage;
  const Segment& segment = log.segments[damage.segment_index];
  repair.damage = WalCorruption{segment.path, damage.offset, damage.reason};
  repair.first_lost_revision = damage.revision;

  // The highest revision of a record that passes its CRC in what is moved aside: what is lost, at least.
  auto note_lost = [&](const std::string& path, uint64_t from) -> absl::Status {
    absl::StatusOr<std::unique_ptr<ReadableFile>> file = fs->OpenReadable(path);
    if (!file.ok()) return file.status();
    absl::StatusOr<uint64_t> size = (*file)->Size();
    if (!size.ok()) return size.status();
    absl::StatusOr<std::string> bytes = ReadRange(**file, from, *size);
    if (!bytes.ok()) return bytes.status();
    repair.bytes_moved += bytes->size();
    if (std::optional<FoundRecord> last = FindRecord(*bytes, from, damage.revision,
                                                     std::numeric_limits<int64_t>::max(), /*highest=*/true)) {
      repair.last_lost_revision = std::max(repair.last_lost_revision, last->revision);
    }
    return absl::OkStatus();
  };
  for (size_t i = damage.segment_index; i < log.segments.size(); ++i) {
    const uint64_t from = i == damage.segment_index ? damage.offset : 0;
    if (absl::Status s = note_lost(log.segments[i].path, from); !s.ok()) return s;
  }

  // The damaged segment: copied whole (so the offsets reported hold in the copy), then truncated at the
  // last good record; or, if its header is the damage, renamed whole.
  absl::StatusOr<std::string> aside = AsideName(fs, segment.path);
  if (!aside.ok()) return aside.status();
  if (damage.offset < kSegmentHeaderBytes) {
    if (absl::Status s = fs->Rename(segment.path, *aside); !s.ok()) return s;
  } else {
    if (absl::Status s = CopyFile(fs, segment.path, *aside); !s.ok()) return s;
    // The copy's name must be durable before the original loses its tail.
    if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
    if (absl::Status s = fs->Truncate(segment.path, damage.offset); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<WritableFile>> cut = fs->OpenWritable(segment.path, OpenMode::kAppend);
    if (!cut.ok()) return cut.status();
    if (absl::Status s = (*cut)->Sync(); !s.ok()) return s;
    if (absl::Status s = (*cut)->Close(); !s.ok()) return s;
  }
  repair.moved.push_back({segment.path, *aside});
  for (size_t i = damage.segment_index + 1; i < log.segments.size(); ++i) {
    absl::StatusOr<std::string> later = AsideName(fs, log.segments[i].path);
    if (!later.ok()) return later.status();
    if (absl::Status s = fs->Rename(log.segments[i].path, *later); !s.ok()) return s;
    repair.moved.push_back({log.segments[i].path, *later});
  }
  if (absl::Status s = fs->SyncDirectory(dir); !s.ok()) return s;
  return repair;
}

}  // namespace

absl::StatusOr<WalRepairReport> RepairWal(FileSystem* fs, const std::string& dir, int64_t after_revision) {
  if (fs == nullptr) fs = DefaultFileSystem();
  // A pass that moves the first segment read aside whole (its header is the damage) makes the segment
  // before it the one Open starts at: covered by the checkpoint, it was never read, and it may be damaged
  // too. So passes repeat until the log as Open reads it is intact. Each pass moves a segment aside or cuts
  // one at its first damage, after which that segment reads intact up to the cut: the passes end.
  WalRepairReport total;
  for (;;) {
    absl::StatusOr<WalRepairReport> pass = RepairPass(fs, dir, after_revision);
    if (!pass.ok()) return pass.status();
    total.last_good_revision = pass->last_good_revision;
    if (!pass->damage) return total;
    if (total.damage && total.damage->segment == pass->damage->segment &&
        total.damage->offset == pass->damage->offset) {
      return absl::InternalError(absl::StrCat("wal: repair of ", dir, " cut ", pass->damage->segment,
                                              " at byte offset ", pass->damage->offset, " twice"));
    }
    // A later pass reads older segments: its damage is where the log now ends.
    total.damage = pass->damage;
    total.first_lost_revision = total.first_lost_revision == 0
                                    ? pass->first_lost_revision
                                    : std::min(total.first_lost_revision, pass->first_lost_revision);
    total.last_lost_revision = std::max(total.last_lost_revision, pass->last_lost_revision);
    total.bytes_moved += pass->bytes_moved;
    total.moved.insert(total.moved.end(), pass->moved.begin(), pass->moved.end());
  }
}

}  // namespace revkv::server
