// Finding a sanitizer's report in a child process's output. The tests that start revkv-server check the
// server's log with this when they finish: under the sanitizer stages of scripts/test the server is
// built with the sanitizer too, and a report in a server that the test then SIGKILLs, or from a thread
// the test never waits for, would otherwise pass unseen (the sanitizers report on stderr, and only a
// report that ends the process shows in its exit status).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace revkv::test_support {

// The first report of AddressSanitizer, LeakSanitizer, ThreadSanitizer or UndefinedBehaviorSanitizer in
// `output`: from the line that opens it to its SUMMARY line (or to the end of the output), at most
// `max_bytes`. Empty if there is none.
inline std::string FirstSanitizerReport(std::string_view output, size_t max_bytes = 16 * 1024) {
  static constexpr std::string_view kOpenings[] = {
      "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer",
      ": runtime error: ",  // UndefinedBehaviorSanitizer's line: "<file>:<line>:<column>: runtime error: ..."
  };
  size_t first = std::string_view::npos;
  for (std::string_view opening : kOpenings) first = std::min(first, output.find(opening));
  if (first == std::string_view::npos) return "";
  const size_t line_start = output.rfind('\n', first);
  const size_t begin = line_start == std::string_view::npos ? 0 : line_start + 1;
  size_t end = output.find("SUMMARY: ", first);
  end = end == std::string_view::npos ? output.size() : output.find('\n', end);
  if (end == std::string_view::npos) end = output.size();
  return std::string(output.substr(begin, std::min(end - begin, max_bytes)));
}

}  // namespace revkv::test_support
