// isatty, Ctrl-C and ANSI redrawing for gc watch.
#include "clients/cli/terminal.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "absl/time/clock.h"

namespace revkv::client {
namespace {

// ANSI (ECMA-48) control sequences.
constexpr char kHideCursor[] = "\x1b[?25l";
constexpr char kShowCursor[] = "\x1b[?25h";
constexpr char kClearScreen[] = "\x1b[2J";
constexpr char kCursorHome[] = "\x1b[H";
constexpr char kClearToLineEnd[] = "\x1b[K";
constexpr char kClearToScreenEnd[] = "\x1b[J";

// Set by the handler. A lock-free atomic store is async-signal-safe; relaxed order is enough because the
// flag carries no other data.
std::atomic<bool> g_interrupted{false};

struct sigaction g_previous_int;
struct sigaction g_previous_term;

extern "C" void OnInterrupt(int /*signal*/) { g_interrupted.store(true, std::memory_order_relaxed); }

constexpr absl::Duration kSleepSlice = absl::Milliseconds(20);

}  // namespace

bool StdoutIsTerminal() { return isatty(STDOUT_FILENO) == 1; }

InterruptGuard::InterruptGuard() {
  g_interrupted.store(false, std::memory_order_relaxed);
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

bool InterruptGuard::Interrupted() { return g_interrupted.load(std::memory_order_relaxed); }

bool InterruptGuard::SleepUnlessInterrupted(absl::Duration duration) {
  const absl::Time end = absl::Now() + duration;
  while (!Interrupted()) {
    const absl::Duration left = end - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    absl::SleepFor(std::min(left, kSleepSlice));
  }
  return !Interrupted();
}

LiveScreen::LiveScreen(std::ostream& out) : out_(out) { out_ << kHideCursor << kClearScreen << std::flush; }

LiveScreen::~LiveScreen() { out_ << kShowCursor << std::flush; }

void LiveScreen::Draw(const std::vector<std::string>& lines) {
  out_ << kCursorHome;
  for (const std::string& line : lines) out_ << line << kClearToLineEnd << '\n';
  out_ << kClearToScreenEnd << std::flush;
}

}  // namespace revkv::client
