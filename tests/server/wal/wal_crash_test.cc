// Crash test: a child process appends from several threads and reports every acknowledged revision
// through a pipe; the parent SIGKILLs it at a random moment, recovers the log and checks that every
// acknowledged revision is there, with its payload, and that revisions are consecutive. The child of the
// next round continues the same log. A process crash must lose nothing acknowledged in any fsync mode
// (in kInterval and kNone the records are acknowledged once write(2) handed them to the kernel).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "server/wal/crc32c.h"
#include "server/wal/wal.h"
#include "tests/server/wal/test_util.h"

namespace revkv::server {
namespace {

// What the child reports per acknowledged record.
struct Ack {
  int64_t revision;
  uint32_t payload_crc;
};

constexpr int kChildThreads = 3;

// Runs in the child: appends until killed. Exit codes other than by SIGKILL are failures.
[[noreturn]] void RunChild(const std::string& dir, FsyncMode mode, int ack_fd, uint64_t seed) {
  WalOptions options{.dir = dir, .fsync_mode = mode, .segment_bytes = 16 * 1024, .buffer_bytes = 1 << 20};
  options.fsync_interval = std::chrono::milliseconds(5);
  int64_t expected = 1;
  absl::StatusOr<std::unique_ptr<Wal>> opened = Wal::Open(
      options, 0,
      [&](int64_t revision, std::string_view) {
        if (revision != expected++) return absl::DataLossError("gap");
        return absl::OkStatus();
      },
      nullptr);
  if (!opened.ok()) _exit(3);
  Wal& wal = **opened;
  const Ack ready{0, 0};  // revision 0: recovery is over, appending starts
  if (::write(ack_fd, &ready, sizeof(ready)) != static_cast<ssize_t>(sizeof(ready))) _exit(5);
  std::mutex section;  // stands in for the inevitable section
  int64_t next_revision = expected;
  std::vector<std::thread> threads;
  for (int t = 0; t < kChildThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 31 + static_cast<uint64_t>(t));
      for (;;) {
        std::string payload(1 + rng() % 600, '\0');
        for (char& c : payload) c = static_cast<char>(rng());
        const uint32_t crc = Crc32c(payload);
        auto revision_cell = std::make_shared<int64_t>(0);
        absl::StatusOr<WalReservation> r = wal.Reserve(payload, [ack_fd, crc, revision_cell](absl::Status s) {
          if (!s.ok()) _exit(4);
          const Ack ack{*revision_cell, crc};
          if (::write(ack_fd, &ack, sizeof(ack)) != static_cast<ssize_t>(sizeof(ack))) _exit(5);
        });
        if (!r.ok()) _exit(6);
        WalLsn lsn;
        {
          std::lock_guard<std::mutex> lock(section);
          *revision_cell = next_revision;
          lsn = wal.Append(*r, next_revision++, payload);
        }
        wal.Notify();
        if (rng() % 4 == 0 && !wal.WaitDurable(lsn).ok()) _exit(7);  // some writers wait, some pipeline
      }
    });
  }
  for (std::thread& t : threads) t.join();
  _exit(8);
}

// Reads what the child sent so far; returns true once its "ready" message has been seen.
bool ReadAcks(int fd, std::string* buffer, std::map<int64_t, uint32_t>* acked) {
  bool ready = false;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n <= 0) break;
    buffer->append(chunk, static_cast<size_t>(n));
  }
  size_t used = 0;
  for (; used + sizeof(Ack) <= buffer->size(); used += sizeof(Ack)) {
    Ack ack;
    std::memcpy(&ack, buffer->data() + used, sizeof(ack));
    if (ack.revision == 0) {
      ready = true;
    } else {
      (*acked)[ack.revision] = ack.payload_crc;
    }
  }
  buffer->erase(0, used);
  return ready;
}

void RunCrashRounds(FsyncMode mode, int rounds) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  testing::ScratchDir dir;
  std::map<int64_t, uint32_t> acked;  // every revision ever acknowledged, with its payload's CRC
  int64_t recovered_last = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round << " (REVKV_TEST_SEED=" << seed << ")");
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    const uint64_t child_seed = rng();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      RunChild(dir.path(), mode, fds[1], child_seed);
    }
    ::close(fds[1]);
    ASSERT_EQ(::fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    // Kill at a random moment: in one round out of five during the child's startup and recovery, else
    // while it appends (the delay starts when it reports ready, so a slow build such as TSan's still
    // gets to append).
    const bool kill_during_recovery = rng() % 5 == 0;
    const auto delay =
        std::chrono::microseconds(kill_during_recovery ? rng() % 20'000 : 2'000 + rng() % 120'000);
    auto deadline = std::chrono::steady_clock::now() + delay;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool ready = kill_during_recovery;
    std::string partial;
    while (std::chrono::steady_clock::now() < deadline || !ready) {
      pollfd p{fds[0], POLLIN, 0};
      ::poll(&p, 1, 1);
      if (ReadAcks(fds[0], &partial, &acked) && !ready) {
        ready = true;
        deadline = std::chrono::steady_clock::now() + delay;
      }
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the child never became ready";
    }
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "child failed on its own: exit code " << (WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    ReadAcks(fds[0], &partial, &acked);  // everything it wrote before dying
    ::close(fds[0]);

    // Recover in the parent and hold the log against the acknowledgments.
    std::map<int64_t, uint32_t> recovered;
    int64_t expected = 1;
    bool consecutive = true;
    WalRecoveryReport report;
    {
      absl::StatusOr<std::unique_ptr<Wal>> wal = Wal::Open(
          {.dir = dir.path()}, 0,
          [&](int64_t revision, std::string_view payload) {
            if (revision != expected++) consecutive = false;
            recovered[revision] = Crc32c(payload);
            return absl::OkStatus();
          },
          &report);
      ASSERT_TRUE(wal.ok()) << wal.status();
      ASSERT_TRUE((*wal)->Close().ok());
    }
    ASSERT_TRUE(consecutive);
    for (const auto& [revision, crc] : acked) {
      auto it = recovered.find(revision);
      ASSERT_NE(it, recovered.end()) << "acknowledged revision " << revision << " lost; "
                                     << report.ToString();
      ASSERT_EQ(it->second, crc) << "revision " << revision << " recovered with other bytes";
    }
    EXPECT_GE(report.last_revision, recovered_last) << "the log went backwards";
    recovered_last = report.last_revision;
  }
  std::cout << "rounds " << rounds << ", acknowledged " << acked.size() << ", recovered " << recovered_last
            << std::endl;
  EXPECT_GT(acked.size(), 0u);
}

TEST(WalCrash, SigkillNeverLosesAnAcknowledgedRecordFsyncAlways) { RunCrashRounds(FsyncMode::kAlways, 30); }

TEST(WalCrash, SigkillNeverLosesAnAcknowledgedRecordFsyncInterval) {
  RunCrashRounds(FsyncMode::kInterval, 10);
}

TEST(WalCrash, SigkillNeverLosesAnAcknowledgedRecordFsyncNone) { RunCrashRounds(FsyncMode::kNone, 10); }

}  // namespace
}  // namespace revkv::server
