// LogBuffer: the in-memory ring of framed records between the appenders and the flusher thread.
//
// Positions are byte counts since the buffer was created; they never wrap (the ring index is
// position & (capacity - 1)). The appender writes at `append_`; `tail_` is the end of what it has
// published; the flusher reads from its own flush position up to `tail_` and then releases what it read.
// Space is handed out in claims, before the appender needs it, so the appender itself never waits.
//
// Invariants:
//  1. claimed_ == (bytes of claims not yet written) + (bytes written and not yet released). A claim is
//     granted only if claimed_ stays <= capacity, so the bytes an appender writes under its claim never
//     overlap bytes the flusher has yet to read.
//  2. Only the appender (one thread at a time, serialized by the caller) moves append_ and tail_.
//  3. tail_ is stored after the bytes below it are written and loaded by the flusher before it reads
//     them (release/acquire, so every byte below the tail it saw is visible to it). Both are seq_cst:
//     the flusher, going idle, stores its idle flag and then loads tail_; the appender's thread stores
//     tail_ and then (in Wal::Notify) loads the idle flag. With all four seq_cst either the flusher sees
//     the new tail or Notify sees it idle and wakes it; release/acquire alone would allow both to miss.
//  4. The flusher releases bytes (a seq_cst decrement of claimed_, which includes release) only after it
//     has finished reading them; a claim granted from that decrement (its CAS includes acquire) happens
//     after those reads, so overwriting them is safe.
#ifndef REVKV_SERVER_WAL_LOG_BUFFER_H_
#define REVKV_SERVER_WAL_LOG_BUFFER_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

namespace revkv::server {

// Thread-safety: Claim/Release/Shutdown from any thread; Write/Publish by one appender at a time
// (the caller serializes them); tail/Read/Pieces by the reader (flusher) thread only.
class LogBuffer {
 public:
  // Allocates and pre-faults (writes every page once) at least `min_capacity` bytes, rounded up to a power
  // of two, so an appender never takes a page fault in memory it has not touched before.
  explicit LogBuffer(size_t min_capacity);
  LogBuffer(const LogBuffer&) = delete;
  LogBuffer& operator=(const LogBuffer&) = delete;

  size_t capacity() const { return capacity_; }

  // --- Space (any thread) ---
  // Claims `bytes` (at most capacity()) of space, blocking while the ring is too full. Returns false,
  // claiming nothing, once Shutdown() has been called.
  bool Claim(uint64_t bytes);
  // Returns `bytes` of space: claimed bytes that will not be written, or read bytes the reader is done with.
  // Wakes blocked claims. Never blocks for long (takes a mutex only when a claim is waiting).
  void Release(uint64_t bytes);
  // Makes every blocked and future Claim return false.
  void Shutdown();

  // --- Appender (one at a time) --- never blocks, allocates or makes a system call.
  // Copies `data` after the previous Write; not visible to the reader until Publish(). The bytes must be
  // covered by a claim of the caller's.
  void Write(std::string_view data);
  // Publishes everything written so far (a seq_cst store of the tail: invariant 3).
  void Publish() { tail_.store(append_, std::memory_order_seq_cst); }

  // --- Reader (flusher thread only) ---
  // End of the published bytes; every byte below it is readable. Any thread may call it, but only the
  // reader may read the bytes.
  uint64_t tail() const { return tail_.load(std::memory_order_seq_cst); }
  // Copies `size` published bytes at position `pos` to `out`.
  void Read(uint64_t pos, size_t size, char* out) const;
  // The published bytes [begin, end) as one piece, or two when the range wraps (the second may be empty).
  std::array<std::string_view, 2> Pieces(uint64_t begin, uint64_t end) const;

 private:
  bool TryClaim(uint64_t bytes);

  const size_t capacity_;
  const size_t mask_;
  const std::unique_ptr<char[]> ring_;

  alignas(64) uint64_t append_ = 0;            // appender only: position of the next Write
  alignas(64) std::atomic<uint64_t> tail_{0};  // appender stores, reader loads: invariant 3
  // Invariant 1. seq_cst so that a releaser either sees a registered waiter or the waiter's next attempt
  // sees the released space (the pair claimed_/waiters_ is a Dekker handshake).
  alignas(64) std::atomic<uint64_t> claimed_{0};
  std::atomic<int> waiters_{0};         // claims blocked (or about to block) in Claim
  std::atomic<bool> shut_down_{false};  // set once by Shutdown; re-checked under mu_ before every wait
  std::mutex mu_;                       // only for blocking: orders a wait against Release and Shutdown
  std::condition_variable space_freed_;
};

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_LOG_BUFFER_H_
