// LogBuffer: claims are a CAS on one counter; only a claim that does not fit takes the mutex and waits.
#include "server/wal/log_buffer.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace revkv::server {

LogBuffer::LogBuffer(size_t min_capacity)
    : capacity_(std::bit_ceil(min_capacity < 4096 ? size_t{4096} : min_capacity)),
      mask_(capacity_ - 1),
      ring_(new char[capacity_]) {
  std::memset(ring_.get(), 0, capacity_);  // pre-fault: Write must not take first-touch page faults
}

bool LogBuffer::TryClaim(uint64_t bytes) {
  uint64_t current = claimed_.load(std::memory_order_seq_cst);
  while (current + bytes <= capacity_) {
    if (claimed_.compare_exchange_weak(current, current + bytes, std::memory_order_seq_cst)) return true;
  }
  return false;
}

bool LogBuffer::Claim(uint64_t bytes) {
  if (shut_down_.load(std::memory_order_acquire)) return false;
  if (TryClaim(bytes)) return true;
  std::unique_lock<std::mutex> lock(mu_);
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  bool granted = false;
  // Shutdown stores the flag before it takes mu_, and we hold mu_ from this check into Wait, so its
  // SignalAll cannot fall between the two.
  while (!shut_down_.load(std::memory_order_acquire)) {
    if (TryClaim(bytes)) {
      granted = true;
      break;
    }
    space_freed_.wait(lock);
  }
  waiters_.fetch_sub(1, std::memory_order_seq_cst);
  return granted;
}

void LogBuffer::Release(uint64_t bytes) {
  claimed_.fetch_sub(bytes, std::memory_order_seq_cst);
  // Dekker with Claim: a waiter increments waiters_ before its last TryClaim, we decrement claimed_ before
  // reading waiters_; with both seq_cst, either it sees our space or we see it waiting.
  if (waiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    space_freed_.notify_all();
  }
}

void LogBuffer::Shutdown() {
  shut_down_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  space_freed_.notify_all();
}

void LogBuffer::Write(std::string_view data) {
  const size_t offset = append_ & mask_;
  const size_t first = std::min(data.size(), capacity_ - offset);
  std::memcpy(ring_.get() + offset, data.data(), first);
  std::memcpy(ring_.get(), data.data() + first, data.size() - first);
  append_ += data.size();
}

void LogBuffer::Read(uint64_t pos, size_t size, char* out) const {
  const size_t offset = pos & mask_;
  const size_t first = std::min(size, capacity_ - offset);
  std::memcpy(out, ring_.get() + offset, first);
  std::memcpy(out + first, ring_.get(), size - first);
}

std::array<std::string_view, 2> LogBuffer::Pieces(uint64_t begin, uint64_t end) const {
  const size_t size = end - begin;
  const size_t offset = begin & mask_;
  const size_t first = std::min(size, capacity_ - offset);
  return {std::string_view(ring_.get() + offset, first), std::string_view(ring_.get(), size - first)};
}

}  // namespace revkv::server
