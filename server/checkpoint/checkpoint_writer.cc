// CheckpointWriter: entries go through a buffer to the .tmp file; the CRC of the entry bytes is kept as
// they are written. The header is written first with a zero entry count and rewritten in place (pwrite)
// by Finish; the footer's CRC over header + entries is then CRC(final header) combined with the entry
// CRC, so nothing is read back.
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/checkpoint/checkpoint.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/wal/crc32c.h"

namespace revkv::server {

namespace format = checkpoint_format;

CheckpointWriter::CheckpointWriter(FileSystem* fs, std::string dir, int64_t revision,
                                   int64_t compact_revision, int64_t base_revision)
    : fs_(fs),
      dir_(std::move(dir)),
      revision_(revision),
      compact_revision_(compact_revision),
      base_revision_(base_revision),
      tmp_path_(JoinPath(dir_, format::FileName(revision, format::kTemporarySuffix))) {}

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Open(FileSystem* fs,
                                                                         const std::string& dir,
                                                                         int64_t revision,
                                                                         int64_t compact_revision,
                                                                         std::optional<int64_t> base) {
  const int64_t base_revision = base.value_or(revision);
  if (revision < 0 || compact_revision < 0 || base_revision > revision || compact_revision > base_revision) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint: bad revisions (revision ", revision,
                                                   ", base revision ", base_revision, ", compact revision ",
                                                   compact_revision, ")"));
  }
  if (absl::Status s = fs->CreateDirectories(dir); !s.ok()) return s;
  std::unique_ptr<CheckpointWriter> writer(
      new CheckpointWriter(fs, dir, revision, compact_revision, base_revision));
  absl::StatusOr<std::unique_ptr<WritableFile>> file =
      fs->OpenWritable(writer->tmp_path_, OpenMode::kTruncate);
  if (!file.ok()) return file.status();
  writer->file_ = *std::move(file);
  writer->tmp_exists_ = true;
  // Placeholder; Finish rewrites it with the entry count.
  if (absl::Status s =
          writer->file_->Append(format::EncodeHeader({revision, compact_revision, 0, base_revision}));
      !s.ok()) {
    return s;  // the destructor removes the file
  }
  writer->buffer_.reserve(kBufferBytes + 4096);
  return writer;
}

CheckpointWriter::~CheckpointWriter() { Abort(); }

absl::Status CheckpointWriter::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  return status_;
}

absl::Status CheckpointWriter::Flush() {
  if (buffer_.empty()) return absl::OkStatus();
  body_crc_ = Crc32cExtend(body_crc_, buffer_.data(), buffer_.size());
  body_bytes_ += buffer_.size();
  absl::Status s = file_->Append(buffer_);
  buffer_.clear();
  return s;
}

absl::Status CheckpointWriter::Add(const CheckpointEntry& entry) {
  if (!status_.ok()) return status_;
  if (finished_) return Fail(absl::FailedPreconditionError("checkpoint: Add after Finish"));
  if (lease_count_ > 0 || state_count_ > 0) {
    return Fail(absl::FailedPreconditionError("checkpoint: an entry after a lease or a state record"));
  }
  if (entry.key.size() > UINT32_MAX || entry.value.size() > UINT32_MAX) {
    return Fail(absl::InvalidArgumentError("checkpoint: key or value longer than 4 GiB"));
  }
  format::AppendEntry(entry, &buffer_);
  ++entry_count_;
  if (buffer_.size() >= kBufferBytes) {
    if (absl::Status s = Flush(); !s.ok()) return Fail(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status CheckpointWriter::AddLease(const CheckpointLease& lease) {
  if (!status_.ok()) return status_;
  if (finished_) return Fail(absl::FailedPreconditionError("checkpoint: AddLease after Finish"));
  if (state_count_ > 0)
    return Fail(absl::FailedPreconditionError("checkpoint: a lease after a state record"));
  format::AppendLease(lease, &buffer_);
  ++lease_count_;
  if (buffer_.size() >= kBufferBytes) {
    if (absl::Status s = Flush(); !s.ok()) return Fail(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status CheckpointWriter::AddState(const CheckpointStateRecord& record) {
  if (!status_.ok()) return status_;
  if (finished_) return Fail(absl::FailedPreconditionError("checkpoint: AddState after Finish"));
  if (record.bytes.size() > UINT32_MAX) {
    return Fail(absl::InvalidArgumentError("checkpoint: state record longer than 4 GiB"));
  }
  format::AppendStateRecord(record, &buffer_);
  ++state_count_;
  if (buffer_.size() >= kBufferBytes) {
    if (absl::Status s = Flush(); !s.ok()) return Fail(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status CheckpointWriter::Complete(const std::string& final_path) {
  if (absl::Status s = Flush(); !s.ok()) return s;
  const std::string header = format::EncodeHeader(
      {revision_, compact_revision_, entry_count_, base_revision_, lease_count_, state_count_});
  const uint32_t crc = Crc32cCombine(Crc32c(header), body_crc_, body_bytes_);
  if (absl::Status s = file_->Append(format::EncodeFooter(crc)); !s.ok()) return s;
  if (absl::Status s = file_->WriteAt(0, header); !s.ok()) return s;
  if (absl::Status s = file_->Sync(); !s.ok()) return s;
  absl::Status closed = file_->Close();
  file_.reset();
  if (!closed.ok()) return closed;
  if (absl::Status s = fs_->Rename(tmp_path_, final_path); !s.ok()) return s;
  tmp_exists_ = false;
  // Until the directory is synced the rename may be lost in a crash; the caller must not rely on this
  // checkpoint (e.g. remove log segments) unless Finish returned OK.
  return fs_->SyncDirectory(dir_);
}

absl::StatusOr<CheckpointInfo> CheckpointWriter::Finish() {
  if (!status_.ok()) return status_;
  if (finished_) return absl::FailedPreconditionError("checkpoint: Finish called twice");
  const std::string final_path = JoinPath(dir_, CheckpointFileName(revision_));
  if (absl::Status s = Complete(final_path); !s.ok()) {
    status_ = std::move(s);
    Abort();  // removes the temporary file if it is still there
    return status_;
  }
  finished_ = true;
  CheckpointInfo info;
  info.path = final_path;
  info.revision = revision_;
  info.compact_revision = compact_revision_;
  info.base_revision = base_revision_;
  info.entry_count = entry_count_;
  info.lease_count = lease_count_;
  info.state_count = state_count_;
  info.bytes = format::kHeaderBytes + body_bytes_ + format::kFooterBytes;
  return info;
}

void CheckpointWriter::Abort() {
  if (finished_ || !tmp_exists_) return;
  if (file_ != nullptr) {
    file_->Close().IgnoreError();
    file_.reset();
  }
  fs_->Remove(tmp_path_).IgnoreError();  // best effort: a leftover .tmp is removed by the next load
  tmp_exists_ = false;
  if (status_.ok()) status_ = absl::CancelledError("checkpoint: aborted");
}

}  // namespace revkv::server
