// Tests of threads, safepoints and stop-the-world: registration, safe regions that do not delay a
// collection and cannot be left during one, and four mutator threads whose rooted structures are
// checked against shadow models after every collection.
#include "runtime/safepoint/safepoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/gc/collector.h"
#include "runtime/gc/gc.h"
#include "runtime/heap/heap.h"
#include "runtime/heap/object_format.h"
#include "runtime/port/port.h"
#include "runtime/safepoint/thread_context.h"
#include "tests/runtime/test_support.h"

namespace revkv::runtime::testing {
namespace {

using namespace std::chrono_literals;

class SafepointTest : public RuntimeTest {};

uint64_t TotalCollections() {
  const GcStatistics s = GetGcStatistics(0);
  return s.collections[0] + s.collections[2];
}

TEST_F(SafepointTest, RegistrationIsCountedAndScoped) {
  EXPECT_TRUE(IsThreadRegistered());
  const int before = RegisteredThreadCount();
  std::thread t([&] {
    EXPECT_FALSE(IsThreadRegistered());
    {
      ThreadRegistration r("worker");
      EXPECT_TRUE(IsThreadRegistered());
      EXPECT_EQ(RegisteredThreadCount(), before + 1);
    }
    EXPECT_FALSE(IsThreadRegistered());
  });
  Join(t);
  EXPECT_EQ(RegisteredThreadCount(), before);
}

// gRPC's callback threads run request handlers between work of their own (HeapVisit). The first visit
// registers the thread for its life; between visits it waits outside the heap without polling, so it
// must be in a safe region there: a collection started meanwhile does not wait for it, and what it
// allocated lives on. It is registered once, and unregistered when it exits.
TEST_F(SafepointTest, AVisitingThreadIsRegisteredOnceAndDoesNotDelayACollectionBetweenVisits) {
  Watchdog watchdog("a collection while a visiting thread waits between visits", std::chrono::seconds(60));
  const int before = RegisteredThreadCount();
  const auto global_root = std::make_unique<GlobalRoot>();  // malloc'd: not a stack word
  std::atomic<int> phase{0};  // 1: the first visit is over; 2: the collection is over
  std::thread visitor([&] {
    EXPECT_FALSE(IsThreadRegistered());
    {
      HeapVisit visit("visitor");
      EXPECT_TRUE(IsVisitingThread());
      Node* n = NewNode(41, NewNode(42));
      CollectMinor();  // out of the nursery: a GlobalRoot may not hold a nursery object
      global_root->Store(n);
    }
    EXPECT_TRUE(IsThreadRegistered());
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();  // outside the heap, never polling
    {
      HeapVisit visit("visitor");
      const auto* n = static_cast<const Node*>(global_root->Load());
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(n->value, 41);
      ASSERT_NE(n->left.Load(), nullptr);
      EXPECT_EQ(n->left.Load()->value, 42);
      EXPECT_EQ(RegisteredThreadCount(), before + 1) << "a second visit registers nothing";
    }
  });
  while (phase.load() != 1) std::this_thread::yield();
  EXPECT_EQ(RegisteredThreadCount(), before + 1);
  ScrubStack();
  CollectMajor(MajorMode::kCompactEverything);  // waits forever if the visitor is not in a safe region
  const GcStatistics stats = GetGcStatistics(1);
  ASSERT_FALSE(stats.recent.empty());
  EXPECT_LT(stats.recent.back().time_to_safepoint_nanos, 10'000'000u) << "time to safepoint must not wait";
  phase.store(2);
  Join(visitor);
  EXPECT_EQ(RegisteredThreadCount(), before) << "a visiting thread is unregistered when it exits";
  global_root->Store(nullptr);
}

// A visit on a registered thread inside a safe region (a worker whose blocking call into gRPC runs a
// handler inline) leaves the region for the visit and goes back to it, at the same depth, after.
TEST_F(SafepointTest, AVisitInsideASafeRegionRunsAndGoesBackToTheRegion) {
  Watchdog watchdog("a collection while a thread is back in its safe region", std::chrono::seconds(60));
  std::atomic<int> phase{0};
  std::thread worker([&] {
    ThreadRegistration r("worker");
    SafeRegion outer;
    SafeRegion inner;
    {
      HeapVisit visit("worker");
      EXPECT_FALSE(IsVisitingThread());
      EXPECT_EQ(NewNode(7)->value, 7);
    }
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  CollectMajor();  // waits forever if the worker did not go back into its region
  phase.store(2);
  Join(worker);
}

// A thread a visit registered may also use a ThreadRegistration (gRPC's synchronous handlers register
// their thread for a call; a callback could have run on the same thread before): it is a visit.
TEST_F(SafepointTest, AThreadRegistrationOnAVisitingThreadIsAVisit) {
  Watchdog watchdog("a collection after a registration on a visiting thread", std::chrono::seconds(60));
  const int before = RegisteredThreadCount();
  std::atomic<int> phase{0};
  std::thread t([&] {
    { HeapVisit visit("visitor"); }
    {
      ThreadRegistration r("handler");
      EXPECT_EQ(NewNode(9)->value, 9);
      EXPECT_EQ(RegisteredThreadCount(), before + 1);
    }
    EXPECT_TRUE(IsVisitingThread()) << "still registered, between visits";
    phase.store(1);
    while (phase.load() != 2) std::this_thread::yield();
  });
  while (phase.load() != 1) std::this_thread::yield();
  CollectMajor();  // waits forever if the registration's end left the thread running
  phase.store(2);
  Join(t);
  EXPECT_EQ(RegisteredThreadCount(), before);
}

TEST_F(SafepointTest, ThreadBlockedInASafeRegionDoesNotDelayACollection) {
  std::atomic<bool> inside{false};
  std::thread blocked([&] {
    ThreadRegistration r("blocked");
    SafeRegion region;
    inside.store(true);
    std::this_thread::sleep_for(1s);
  });
  while (!inside.load()) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  CollectMajor();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const GcStatistics stats = GetGcStatistics(1);
  ASSERT_FALSE(stats.recent.empty());
  EXPECT_LT(stats.recent.back().time_to_safepoint_nanos, 10'000'000u) << "time to safepoint must not wait";
  EXPECT_LT(elapsed, 500ms);
  Join(blocked);
}

TEST_F(SafepointTest, LeavingASafeRegionDuringACollectionBlocksUntilItEnds) {
  std::atomic<int> phase{0};         // 1: thread in region; 2: collector told it to leave
  std::atomic<uint64_t> left_at{0};  // when the thread got out of its region
  std::atomic<uint64_t> world_resumed_no_earlier_than{0};
  std::thread t([&] {
    ThreadRegistration r("leaver");
    {
      SafeRegion region;
      phase.store(1);
      while (phase.load() != 2) std::this_thread::yield();
    }
    left_at.store(port::NowNanos());
    (void)New<Node>();  // touches the heap right away
  });
  while (phase.load() != 1) std::this_thread::yield();
  SetStoppedWorldHookForTesting([&] {
    phase.store(2);
    std::this_thread::sleep_for(100ms);  // the world stays stopped; the thread must not get out
    world_resumed_no_earlier_than.store(port::NowNanos());
  });
  CollectMajor();
  SetStoppedWorldHookForTesting(nullptr);
  Join(t);
  EXPECT_GE(left_at.load(), world_resumed_no_earlier_than.load());
}

// SetStoppedWorldHookForTesting waits for the collector mutex the way a collection does, in a safe
// region: a registered thread calling it while another thread's collection holds the mutex and is
// stopping the world must not block while running (the collector would wait for it forever).
TEST_F(SafepointTest, SettingTheStoppedWorldHookWhileAnotherThreadCollectsDoesNotDeadlock) {
  Watchdog watchdog("setting the stopped-world hook during collections", std::chrono::seconds(60));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> collections{0};
  std::atomic<uint64_t> hook_runs{0};
  std::thread collector([&] {
    ThreadRegistration r("collector");
    while (!stop.load()) {
      CollectMajor();
      collections.fetch_add(1);
    }
  });
  while (collections.load() < 1) Poll();
  const uint64_t target = collections.load() + Scaled(100);
  while (collections.load() < target) {
    Poll();
    SetStoppedWorldHookForTesting([&] { hook_runs.fetch_add(1); });
    Poll();
    SetStoppedWorldHookForTesting(nullptr);
  }
  stop.store(true);
  Join(collector);
  EXPECT_GE(collections.load(), target);
}

// Spinning threads stop at their next poll. As many spinners as leave a core for the collecting thread:
// with more runnable threads than cores, a stop waits for the scheduler rather than for a poll.
TEST_F(SafepointTest, RunningThreadsStopAtPollsQuickly) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const int spinners = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
  for (int i = 0; i < spinners; ++i) {
    threads.emplace_back([&] {
      ThreadRegistration r("spinner");
      while (!stop.load(std::memory_order_relaxed)) Poll();
    });
  }
  while (RegisteredThreadCount() < spinners + 1) std::this_thread::yield();
  for (int i = 0; i < 20; ++i) CollectMajor();
  stop.store(true);
  JoinAll(threads);
  const HistogramSnapshot tts = TimeToSafepointHistogram();
  EXPECT_GE(tts.count, 20u);
  EXPECT_LT(tts.Quantile(0.5), 5'000'000u);
}

// Holds the collector mutex as a major collection does, waiting for it inside a safe region. A test
// that stops the world itself must hold it: a thread starting a major collection meanwhile would
// otherwise block on the registry mutex while running, and the two stops would wait for each other.
class CollectorLock {
 public:
  CollectorLock() : lock_(CollectorMutex(), std::try_to_lock) {
    if (!lock_.owns_lock()) {
      SafeRegion waiting;
      lock_.lock();
    }
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A thread that only allocates polls at every nursery chunk switch, so a stop request is answered
// within one chunk (16 KiB) of allocation, not once per nursery. Measured in allocations rather than
// time, so a busy machine does not make it flaky: between reading the allocator's counter and the
// world being stopped, the allocator may run at most a chunk's worth of allocations (plus what it
// did while the requester was descheduled in between, hence the median over many stops).
TEST_F(SafepointTest, AnAllocatingThreadStopsWithinOneNurseryChunk) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> allocations{0};
  std::thread allocator([&] {
    ThreadRegistration r("allocator");
    while (!stop.load(std::memory_order_relaxed)) {
      ASSERT_TRUE(New<Node>().ok());
      allocations.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (RegisteredThreadCount() < 2) std::this_thread::yield();
  while (allocations.load() < 100'000) std::this_thread::yield();
  ThreadContext* self = CurrentThread();
  ThreadRegistry& registry = ThreadRegistry::Get();
  std::vector<uint64_t> during_stop;
  for (int i = 0; i < 41; ++i) {
    {
      CollectorLock no_other_collection;
      const uint64_t before = allocations.load(std::memory_order_relaxed);
      registry.StopTheWorld(self);
      during_stop.push_back(allocations.load(std::memory_order_relaxed) - before);
      registry.ResumeTheWorld();
    }
    SafeRegion pause;
    std::this_thread::sleep_for(1ms);
  }
  stop.store(true);
  Join(allocator);
  std::sort(during_stop.begin(), during_stop.end());
  const uint64_t per_chunk = kChunkSize / AlignObjectSize(sizeof(Node));
  const uint64_t per_nursery = SmallHeapOptions().nursery_bytes / AlignObjectSize(sizeof(Node));
  EXPECT_LE(during_stop[during_stop.size() / 2], 2 * per_chunk)
      << "allocations between a stop request and the stop (median of " << during_stop.size()
      << "); a nursery holds " << per_nursery;
}

// One mutator: a root Fan of chains of nodes, mutated at random, with a shadow model of values.
class Mutator {
 public:
  Mutator(uint64_t seed, int slots) : rng_(seed), shadow_(slots) {}

  void Run(std::atomic<bool>& stop, std::atomic<uint64_t>& checks) {
    ThreadRegistration r("mutator");
    absl::StatusOr<Fan*> fan = NewWithTail<Fan>(shadow_.size() * sizeof(void*));
    ASSERT_TRUE(fan.ok());
    Root<Fan> root(*fan);
    root->count = shadow_.size();
    uint64_t seen = TotalCollections();
    while (!stop.load(std::memory_order_relaxed)) {
      Step(root.get());
      const uint64_t now = TotalCollections();
      if (now != seen) {
        seen = now;
        Check(root.get());
        checks.fetch_add(1, std::memory_order_relaxed);
      }
    }
    Check(root.get());
  }

 private:
  void Step(Fan* fan) {
    const size_t slot = rng_() % shadow_.size();
    std::vector<int64_t>& model = shadow_[slot];
    switch (rng_() % 4) {
      case 0: {  // replace the chain
        model.clear();
        Node* head = nullptr;
        const int len = static_cast<int>(rng_() % 8);
        for (int i = 0; i < len; ++i) {
          const auto v = static_cast<int64_t>(rng_());
          absl::StatusOr<Node*> n = New<Node>();
          ASSERT_TRUE(n.ok());
          (*n)->value = v;
          (*n)->left.Store(head);
          head = *n;
          model.insert(model.begin(), v);
        }
        fan->slots()[slot].Store(head);
        break;
      }
      case 1: {  // prepend
        const auto v = static_cast<int64_t>(rng_());
        absl::StatusOr<Node*> n = New<Node>();
        ASSERT_TRUE(n.ok());
        (*n)->value = v;
        (*n)->left.Store(static_cast<Node*>(RawReference(fan->slots()[slot])));
        fan->slots()[slot].Store(*n);
        model.insert(model.begin(), v);
        break;
      }
      case 2: {  // change a value in place
        if (model.empty()) break;
        const size_t at = rng_() % model.size();
        Node* n = static_cast<Node*>(RawReference(fan->slots()[slot]));
        for (size_t i = 0; i < at; ++i) n = n->left.Load();
        model[at] = static_cast<int64_t>(rng_());
        n->value = model[at];
        break;
      }
      default: {  // garbage
        for (int i = 0; i < 16; ++i) (void)New<Node>();
        break;
      }
    }
    if (model.size() > 64) {  // keep chains short
      model.clear();
      fan->slots()[slot].Store(nullptr);
    }
  }

  void Check(Fan* fan) {
    for (size_t s = 0; s < shadow_.size(); ++s) {
      Node* n = static_cast<Node*>(RawReference(fan->slots()[s]));
      for (int64_t v : shadow_[s]) {
        ASSERT_NE(n, nullptr) << "slot " << s;
        ASSERT_EQ(n->value, v) << "slot " << s;
        n = n->left.Load();
      }
      ASSERT_EQ(n, nullptr) << "slot " << s;
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::vector<int64_t>> shadow_;  // outside the heap: values only, no pointers
};

TEST_F(SafepointTest, FourThreadsMutateTheirStructuresWhileTheWorldStopsRepeatedly) {
  const uint64_t seed = TestSeed();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> checks{0};
  std::vector<std::unique_ptr<Mutator>> mutators;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    mutators.push_back(std::make_unique<Mutator>(seed + static_cast<uint64_t>(i), 512));
  for (int i = 0; i < 4; ++i) threads.emplace_back([&, i] { mutators[i]->Run(stop, checks); });
  // Several seconds, and at least 50 stops and 20 checks per mutator however slow the build is.
  const auto start = std::chrono::steady_clock::now();
  const auto duration = std::chrono::milliseconds(static_cast<int64_t>(4000 * Scale()) + 500);
  uint64_t majors = 0;
  while (std::chrono::steady_clock::now() < start + duration || majors < 50 || checks.load() < 4 * 20u) {
    ASSERT_LT(std::chrono::steady_clock::now(), start + std::chrono::minutes(3))
        << "mutators stopped progressing";
    std::this_thread::sleep_for(5ms);
    CollectMajor();
    ++majors;
  }
  stop.store(true);
  JoinAll(threads);
  EXPECT_GE(majors, 50u);
  EXPECT_GE(checks.load(), 4 * 20u);
  const HistogramSnapshot tts = TimeToSafepointHistogram();
  std::printf("majors %llu, structure checks %llu, time-to-safepoint p50 %llu ns p99 %llu ns max %llu ns\n",
              static_cast<unsigned long long>(majors), static_cast<unsigned long long>(checks.load()),
              static_cast<unsigned long long>(tts.Quantile(0.5)),
              static_cast<unsigned long long>(tts.Quantile(0.99)), static_cast<unsigned long long>(tts.max));
}

// The time-to-safepoint watchdog: a thread that runs 200 ms without polling holds up a stop past a
// 20 ms threshold; the stop logs the thread by name and state and counts it. A stop that nothing holds
// up counts nothing.
TEST_F(SafepointTest, TheWatchdogReportsAThreadThatHoldsUpAStop) {
  SetSafepointWatchdogNanos(20'000'000);
  const uint64_t late_before = GetGcStatistics(0).late_safepoints;
  CollectMajor();  // no other thread: nobody is late
  EXPECT_EQ(GetGcStatistics(0).late_safepoints, late_before);
  std::atomic<bool> spinning{false};
  std::atomic<bool> done{false};
  std::thread slow([&] {
    ThreadRegistration r("slow-worker");
    spinning.store(true, std::memory_order_release);
    const auto until = std::chrono::steady_clock::now() + 200ms;
    while (std::chrono::steady_clock::now() < until) {
    }  // no poll: the stop must wait
    while (!done.load(std::memory_order_acquire)) Poll();
  });
  while (!spinning.load(std::memory_order_acquire)) std::this_thread::yield();
  ::testing::internal::CaptureStderr();
  CollectMajor();
  const std::string log = ::testing::internal::GetCapturedStderr();
  done.store(true, std::memory_order_release);
  Join(slow);
  SetSafepointWatchdogNanos(50'000'000);
  EXPECT_EQ(GetGcStatistics(0).late_safepoints, late_before + 1);
  EXPECT_NE(log.find("thread 'slow-worker'"), std::string::npos) << log;
  EXPECT_NE(log.find("which is running"), std::string::npos) << log;
  EXPECT_GE(LastRecord().time_to_safepoint_nanos, 20'000'000u);
}

// A thread that parks after the collector's spin has ended is seen at once: the collector blocks on
// its state word and Park wakes it, rather than finding it at the end of some nap. The thread runs
// 700 us without polling, then parks; the stop must end soon after. Over many stops, the median of
// (stop returned - thread parked) stays well under the few hundred microseconds a nap would add.
TEST_F(SafepointTest, AStopEndsAsSoonAsALateThreadParks) {
  constexpr int kStops = 15;
  std::atomic<int> round{0};
  std::atomic<uint64_t> round_start{0};
  std::atomic<uint64_t> parked_at{0};
  std::thread late([&] {
    ThreadRegistration r("late-parker");
    for (int i = 1; i <= kStops; ++i) {
      while (round.load(std::memory_order_acquire) < i) {
      }  // no poll: the stop waits for us
      const uint64_t until = round_start.load(std::memory_order_relaxed) + 700'000;
      while (port::NowNanos() < until) {
      }
      parked_at.store(port::NowNanos(), std::memory_order_relaxed);
      Poll();
    }
  });
  while (RegisteredThreadCount() < 2) std::this_thread::yield();
  std::vector<uint64_t> delays;
  {
    CollectorLock lock;
    ThreadContext* self = CurrentThread();
    for (int i = 1; i <= kStops; ++i) {
      round_start.store(port::NowNanos(), std::memory_order_relaxed);
      round.store(i, std::memory_order_release);
      ThreadRegistry::Get().StopTheWorld(self);
      const uint64_t stopped = port::NowNanos();
      delays.push_back(stopped - parked_at.load(std::memory_order_relaxed));
      ThreadRegistry::Get().ResumeTheWorld();
    }
  }
  Join(late);
  std::sort(delays.begin(), delays.end());
  std::printf("park-to-stop delay: median %llu ns, max %llu ns\n",
              static_cast<unsigned long long>(delays[delays.size() / 2]),
              static_cast<unsigned long long>(delays.back()));
  EXPECT_LT(delays[delays.size() / 2], 250'000u);
}

// Lateness is counted per thread from when the collector turns to it: a thread still running behind a
// late one, which then parks within the threshold of the collector's turning to it, is not reported.
// The workers end their no-poll loops on events, not on clock deadlines, so a loaded machine that
// delays a thread's start changes nothing: `first` runs until the watchdog has reported it (at least the
// threshold into the stop), `second` until `first` has left its loop, and then both poll.
TEST_F(SafepointTest, TheWatchdogDoesNotBlameAThreadQueuedBehindALateOne) {
  constexpr uint64_t kThreshold = 200'000'000;  // far above a scheduling delay of a loaded machine
  SetSafepointWatchdogNanos(kThreshold);
  const uint64_t late_before = GetGcStatistics(0).late_safepoints;
  std::atomic<int> registered{0};
  std::atomic<bool> go{false};
  std::atomic<int> running{0};  // workers in their no-poll loops
  std::atomic<bool> first_left{false};
  std::atomic<bool> done{false};
  // A no-poll loop that ends when `until()` holds, or after 10 s (a broken watchdog then fails the
  // expectations below instead of hanging the test).
  auto spin = [](auto until) {
    const uint64_t give_up = port::NowNanos() + 10'000'000'000;
    while (!until() && port::NowNanos() < give_up) {
    }  // no poll
  };
  // Registered in this order, so the collector waits for `first` before it turns to `second`.
  auto worker = [&](const char* name, int order) {
    while (registered.load(std::memory_order_acquire) != order) std::this_thread::yield();
    ThreadRegistration r(name);
    registered.fetch_add(1, std::memory_order_acq_rel);
    while (!go.load(std::memory_order_acquire)) Poll();
    running.fetch_add(1, std::memory_order_acq_rel);
    if (order == 0) {
      spin([&] { return GetGcStatistics(0).late_safepoints > late_before; });
      first_left.store(true, std::memory_order_release);
    } else {
      spin([&] { return first_left.load(std::memory_order_acquire); });
    }
    while (!done.load(std::memory_order_acquire)) Poll();
  };
  std::thread first(worker, "late-first", 0);
  std::thread second(worker, "queued-second", 1);
  while (registered.load(std::memory_order_acquire) != 2) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  while (running.load(std::memory_order_acquire) != 2) std::this_thread::yield();
  ::testing::internal::CaptureStderr();
  const uint64_t stop_began = port::NowNanos();
  {
    // This thread stops the world itself, so it is the one waiting, and waits in registration order.
    CollectorLock lock;
    ThreadRegistry::Get().StopTheWorld(CurrentThread());
    ThreadRegistry::Get().ResumeTheWorld();
  }
  const uint64_t stop_nanos = port::NowNanos() - stop_began;
  const std::string log = ::testing::internal::GetCapturedStderr();
  done.store(true, std::memory_order_release);
  Join(first);
  Join(second);
  SetSafepointWatchdogNanos(50'000'000);
  EXPECT_GE(stop_nanos, kThreshold) << "`second` ran past the threshold of the stop's start";
  EXPECT_EQ(GetGcStatistics(0).late_safepoints, late_before + 1) << log;
  EXPECT_NE(log.find("thread 'late-first'"), std::string::npos) << log;
  EXPECT_EQ(log.find("thread 'queued-second'"), std::string::npos) << log;
}

}  // namespace
}  // namespace revkv::runtime::testing
