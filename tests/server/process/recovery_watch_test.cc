// The recovery watch: a progress line at each change of phase and every log_interval; systemd hears
// STATUS= with EXTEND_TIMEOUT_USEC= while the figures move and STATUS= alone while they do not (so a
// stuck recovery still times out); SIGHUP is logged and ignored, SIGTERM calls on_stop. systemd is a
// datagram socket the test reads, named by NOTIFY_SOCKET as systemd names its own.
#include "server/process/recovery_watch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

using std::chrono::milliseconds;

// systemd's side: a datagram socket at NOTIFY_SOCKET.
class FakeSystemd {
 public:
  FakeSystemd() {
    path_ = testing::TempDir() + "/notify-" + std::to_string(getpid());
    unlink(path_.c_str());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  }
  ~FakeSystemd() {
    unsetenv("NOTIFY_SOCKET");
    close(fd_);
    unlink(path_.c_str());
  }
  std::vector<std::string> Messages() {
    char buffer[4096];
    for (ssize_t n; (n = recv(fd_, buffer, sizeof(buffer), 0)) > 0;)
      received_.emplace_back(buffer, static_cast<size_t>(n));
    return received_;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> received_;
};

// The default logger writes into a string for the test's duration.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::vector<std::string> Lines() {
    spdlog::default_logger()->flush();
    std::vector<std::string> lines;
    std::istringstream in(stream_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::logger> previous_;
};

int Count(const std::vector<std::string>& all, const std::string& text) {
  int n = 0;
  for (const std::string& s : all) n += s.find(text) != std::string::npos ? 1 : 0;
  return n;
}

RecoveryWatch::Options Fast() {
  RecoveryWatch::Options o;
  o.log_interval = milliseconds(100);
  o.poll = milliseconds(5);
  sigemptyset(&o.signals);
  return o;
}

TEST(RecoveryWatch, LogsEachPhaseAndEveryIntervalAndExtendsTheStartWhileThereIsProgress) {
  FakeSystemd systemd;
  CapturedLog log;
  RecoveryProgress progress;
  SystemdNotifier notifier;
  {
    RecoveryWatch watch(&progress, &notifier, Fast());
    std::this_thread::sleep_for(milliseconds(30));  // the watch's first look: still opening
    progress.StartCheckpoint("checkpoint-0000000000000010.ckpt", 1000);
    for (int i = 1; i <= 100; ++i) {  // 500 ms of figures that move every 5 ms
      progress.CheckpointLoaded(static_cast<uint64_t>(i) * 10);
      std::this_thread::sleep_for(milliseconds(5));
    }
    progress.StartLog(2, 1 << 20);
    std::this_thread::sleep_for(milliseconds(20));
    watch.Stop();
  }
  const std::vector<std::string> lines = log.Lines();
  // About 500 ms of checkpoint at one line per 100 ms, plus the line at the phase's start.
  EXPECT_GE(Count(lines, "recovery: loading checkpoint checkpoint-0000000000000010.ckpt: "), 4)
      << testing::PrintToString(lines);
  EXPECT_GE(Count(lines, " of 1000 entries ("), 4);
  EXPECT_EQ(Count(lines, "recovery: replaying the log: 2 segment(s), 1.0 MiB"), 1)
      << testing::PrintToString(lines);
  const std::vector<std::string> messages = systemd.Messages();
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages[0], "STATUS=recovering: opening the data directory\nEXTEND_TIMEOUT_USEC=30000000");
  EXPECT_GE(Count(messages, "STATUS=recovering: loading checkpoint"), 4) << testing::PrintToString(messages);
  EXPECT_EQ(Count(messages, "no progress"), 0)
      << "every message while the figures move extends the start: " << testing::PrintToString(messages);
  EXPECT_EQ(Count(messages, "EXTEND_TIMEOUT_USEC=30000000"), static_cast<int>(messages.size()));
}

TEST(RecoveryWatch, AStuckRecoveryIsReportedWithoutExtendingTheStart) {
  FakeSystemd systemd;
  CapturedLog log;
  RecoveryProgress progress;
  SystemdNotifier notifier;
  progress.StartCheckpoint("checkpoint-0000000000000010.ckpt", 1000);
  progress.CheckpointLoaded(500);
  {
    RecoveryWatch watch(&progress, &notifier, Fast());
    std::this_thread::sleep_for(milliseconds(450));
  }
  EXPECT_GE(Count(log.Lines(),
                  "recovery: loading checkpoint checkpoint-0000000000000010.ckpt: 500 of 1000 entries (50%)"),
            3);
  const std::vector<std::string> messages = systemd.Messages();
  ASSERT_GE(messages.size(), 3u) << testing::PrintToString(messages);
  EXPECT_EQ(Count(messages, "EXTEND_TIMEOUT_USEC="), 1)
      << "only the first message extends: " << testing::PrintToString(messages);
  EXPECT_EQ(
      messages[1],
      "STATUS=recovering, no progress for a while: loading checkpoint checkpoint-0000000000000010.ckpt: "
      "500 of 1000 entries (50%)");
}

TEST(RecoveryWatch, SighupIsIgnoredAndSigtermCallsOnStop) {
  CapturedLog log;
  RecoveryProgress progress;
  SystemdNotifier notifier;  // NOTIFY_SOCKET unset: sd_notify does nothing
  sigset_t signals, previous;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &signals, &previous), 0);  // the watch's thread inherits it
  std::atomic<int> stopped_by{0};
  {
    RecoveryWatch::Options o = Fast();
    o.signals = signals;
    o.on_stop = [&](int signal) { stopped_by = signal; };
    RecoveryWatch watch(&progress, &notifier, o);
    ASSERT_EQ(kill(getpid(), SIGHUP), 0);
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_EQ(stopped_by.load(), 0);
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (stopped_by.load() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &previous, nullptr), 0);
  EXPECT_EQ(stopped_by.load(), SIGTERM);
  const std::vector<std::string> lines = log.Lines();
  EXPECT_EQ(Count(lines, "SIGHUP during recovery: ignored"), 1) << testing::PrintToString(lines);
  EXPECT_EQ(Count(lines, "SIGTERM during recovery: stopping before the store is recovered"), 1);
}

}  // namespace
}  // namespace revkv::server
