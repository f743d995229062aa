// Open-loop pacing of operation starts: a token bucket kept as a theoretical arrival time (GCRA).
//
// Tokens arrive at `rate` per second; the bucket holds at most `burst` of them and starts empty. Reserve
// hands out the next token and says when it is (or was) available. The caller starts its operation then
// and measures latency from that time, not from when it got round to sending: when the server falls
// behind and every slot is busy, the wait for a free slot counts in the latency (no coordinated
// omission), and up to `burst` late operations are started back to back to catch up.
#ifndef REVKV_CLIENTS_BENCH_TOKEN_BUCKET_H_
#define REVKV_CLIENTS_BENCH_TOKEN_BUCKET_H_

#include <algorithm>
#include <chrono>

namespace revkv::client {

// A token bucket. Owner thread only.
class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // `rate` > 0 tokens per second, `burst` >= 1 tokens; the first token arrives at `start`.
  TokenBucket(double rate, double burst, Clock::time_point start)
      : interval_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / rate))),
        burst_window_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>((std::max(burst, 1.0) - 1.0) / rate))),
        next_(start) {}

  // Takes the next token and returns the time it becomes available: at or before `now` means start at
  // once (the returned time is the operation's intended start); later means wait until then.
  Clock::time_point Reserve(Clock::time_point now) {
    const Clock::time_point at = std::max(next_, now - burst_window_);
    next_ = at + interval_;
    return at;
  }

 private:
  Clock::duration interval_;      // time between two tokens
  Clock::duration burst_window_;  // how far back unused tokens are kept: (burst - 1) intervals
  Clock::time_point next_;        // when the next token arrives
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_BENCH_TOKEN_BUCKET_H_
