// The snapshot file (snapshot_file.h).
#include "server/engine/snapshot_file.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace revkv::server {

struct SnapshotHasher::State {
  EVP_MD_CTX* context = nullptr;
};

SnapshotHasher::SnapshotHasher() : state_(std::make_unique<State>()) {
  state_->context = EVP_MD_CTX_new();
  if (state_->context == nullptr || EVP_DigestInit_ex(state_->context, EVP_sha256(), nullptr) != 1) {
    std::abort();  // only out of memory: OpenSSL always has SHA-256
  }
}

SnapshotHasher::~SnapshotHasher() { EVP_MD_CTX_free(state_->context); }

void SnapshotHasher::Update(std::string_view bytes) {
  if (EVP_DigestUpdate(state_->context, bytes.data(), bytes.size()) != 1) std::abort();
}

std::string SnapshotHasher::Finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(state_->context, digest, &length) != 1 || length != kSnapshotChecksumBytes)
    std::abort();
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string SnapshotPaddingAndTrailer(uint64_t image_bytes) {
  const uint64_t unpadded = image_bytes + kSnapshotTrailerBytes;
  const uint64_t padding = (kSnapshotAlignment - unpadded % kSnapshotAlignment) % kSnapshotAlignment;
  std::string out(padding, '\0');
  char length[8];
  std::memcpy(length, &image_bytes, sizeof length);  // little-endian hosts only, as every revkv format
  out.append(length, sizeof length);
  out.append(kSnapshotMagic);
  return out;
}

uint64_t SnapshotStreamBytes(uint64_t image_bytes) {
  return image_bytes + SnapshotPaddingAndTrailer(image_bytes).size() + kSnapshotChecksumBytes;
}

absl::StatusOr<SnapshotFileInfo> VerifySnapshotFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    if (error == ENOENT) return absl::NotFoundError(absl::StrCat("snapshot ", path, " does not exist"));
    return absl::UnavailableError(absl::StrCat("cannot read snapshot ", path, ": ", std::strerror(error)));
  }
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0, std::ios::beg);
  auto damaged = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("snapshot ", path, " (", size, " bytes) ", why));
  };
  if (size < kSnapshotAlignment + kSnapshotChecksumBytes ||
      size % kSnapshotAlignment != kSnapshotChecksumBytes) {
    return damaged(
        "is truncated or not a revkv snapshot: its size is not a multiple of 512 bytes plus a 32-byte "
        "SHA-256 "
        "checksum");
  }
  const uint64_t body = size - kSnapshotChecksumBytes;
  SnapshotHasher hasher;
  std::vector<char> buffer(1 << 20);
  // The last bytes before the checksum: the trailer and the padding before it (at most 511 bytes).
  const uint64_t window = std::min<uint64_t>(body, 2 * kSnapshotAlignment);
  std::string tail;
  uint64_t done = 0;
  while (done < body) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), body - done));
    if (!in.read(buffer.data(), static_cast<std::streamsize>(want))) {
      return absl::UnavailableError(absl::StrCat("cannot read snapshot ", path, " at byte ", done));
    }
    hasher.Update(std::string_view(buffer.data(), want));
    const uint64_t end = done + want;
    if (end > body - window) {
      const uint64_t from = std::max(done, body - window);
      tail.append(buffer.data() + (from - done), static_cast<size_t>(end - from));
    }
    done = end;
  }
  char stored[kSnapshotChecksumBytes];
  if (!in.read(stored, sizeof stored)) {
    return absl::UnavailableError(absl::StrCat("cannot read the checksum of snapshot ", path));
  }
  const std::string computed = hasher.Finish();
  if (computed != std::string_view(stored, sizeof stored)) {
    return damaged(absl::StrCat("is damaged: its SHA-256 checksum does not match (stored ",
                                absl::BytesToHexString(absl::string_view(stored, sizeof stored)),
                                ", computed ", absl::BytesToHexString(computed), ")"));
  }
  const std::string_view trailer = std::string_view(tail).substr(tail.size() - kSnapshotTrailerBytes);
  if (trailer.substr(8) != kSnapshotMagic) {
    return damaged("is not a revkv snapshot (no revkvSNP trailer; an etcd snapshot is a bolt database)");
  }
  uint64_t image = 0;
  std::memcpy(&image, trailer.data(), sizeof image);
  if (image > body - kSnapshotTrailerBytes || SnapshotStreamBytes(image) != size) {
    return damaged(absl::StrCat("has a trailer naming an image of ", image, " bytes that does not fit it"));
  }
  // The padding between the image and the trailer is zeros (it lies within the window read).
  const uint64_t padding = body - kSnapshotTrailerBytes - image;
  for (uint64_t i = 0; i < padding; ++i) {
    if (tail[tail.size() - kSnapshotTrailerBytes - 1 - i] != '\0')
      return damaged("has padding that is not zeros");
  }
  SnapshotFileInfo info;
  info.file_bytes = size;
  info.image_bytes = image;
  return info;
}

}  // namespace revkv::server
