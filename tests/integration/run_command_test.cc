// The test support's RunCommand (server_process.h): what a command and the processes it starts write is
// captured whole, however they interleave.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "tests/integration/server_process.h"

namespace revkv::integration {
namespace {

// Two processes write lines to the same stdout at once, as a shell and the etcdctl it started in the
// background do in the coordination tests. Every line must be captured: the captured stream is one file
// description shared by both, and without O_APPEND two writes racing on its offset can land at the same
// place, the later one overwriting the earlier (a coordination test once lost the shell's
// "first exited 0" that way).
TEST(RunCommand, ConcurrentWritersToTheSameStdoutLoseNoLine) {
  constexpr int kLines = 20000;
  const std::string script = "i=0; while [ $i -lt " + std::to_string(kLines) +
                             " ]; do echo a$i; i=$((i+1)); done & "
                             "i=0; while [ $i -lt " +
                             std::to_string(kLines) + " ]; do echo b$i; i=$((i+1)); done; wait";
  const CommandResult r = RunCommand({"/bin/sh", "-c", script}, "", {}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  EXPECT_EQ(lines.size(), size_t{2 * kLines})
      << "lines lost or garbled: " << r.out.size() << " bytes captured";
  EXPECT_EQ(lines.count("a0") + lines.count("b0") + lines.count("a19999") + lines.count("b19999"), 4u);
}

}  // namespace
}  // namespace revkv::integration
