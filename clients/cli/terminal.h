// The terminal side of `gc watch`: whether standard output is a terminal, redrawing a block of lines in
// place with ANSI escapes, and stopping cleanly on Ctrl-C. All of it is used from the command's thread
// only; the signal handler only sets a flag.
#ifndef REVKV_CLIENTS_CLI_TERMINAL_H_
#define REVKV_CLIENTS_CLI_TERMINAL_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace revkv::client {

// True when standard output is a terminal (isatty).
bool StdoutIsTerminal();

// Makes SIGINT and SIGTERM set the flag that Interrupted reads instead of ending the process, until
// the guard is destroyed (the previous handlers are then restored). Owner thread only; one at a time.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // True once SIGINT or SIGTERM has arrived while the guard lived.
  static bool Interrupted();

  // Sleeps for `duration`, or less if interrupted. Returns !Interrupted().
  static bool SleepUnlessInterrupted(absl::Duration duration);
};

// A block of lines drawn at the top of the terminal and redrawn in place: clears the screen and hides
// the cursor when constructed, shows the cursor again when destroyed. Owner thread only.
class LiveScreen {
 public:
  explicit LiveScreen(std::ostream& out);
  ~LiveScreen();
  LiveScreen(const LiveScreen&) = delete;
  LiveScreen& operator=(const LiveScreen&) = delete;

  // Replaces what was drawn with `lines` and flushes.
  void Draw(const std::vector<std::string>& lines);

 private:
  std::ostream& out_;
};

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_TERMINAL_H_
