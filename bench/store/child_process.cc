// Child processes of revkv-bench-store (child_process.h). The child writes one JSON document to the
// pipe, {"result": ...} or {"error": "..."}, and leaves with _exit: the runtime's threads and heap are
// never torn down.
#include "bench/store/child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"

namespace revkv::bench::store {

namespace {

using nlohmann::json;

bool WriteAll(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadAll(int fd) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

[[noreturn]] void ChildMain(int fd, size_t max_heap_bytes, const ChildBody& body) {
  runtime::HeapOptions options;
  if (max_heap_bytes != 0) options.max_heap_bytes = max_heap_bytes;
  runtime::InitializeRuntime(options);
  json out;
  {
    runtime::ThreadRegistration registration("bench-main");
    absl::StatusOr<json> result = body();
    out = result.ok() ? json{{"result", *result}} : json{{"error", result.status().ToString()}};
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(WriteAll(fd, out.dump()) ? 0 : 2);
}

}  // namespace

absl::StatusOr<json> RunInChild(const std::string& what, size_t max_heap_bytes, const ChildBody& body) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    ChildMain(fds[1], max_heap_bytes, body);
  }
  close(fds[1]);
  const std::string text = ReadAll(fds[0]);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(what, ": child ",
                                            WIFSIGNALED(status)
                                                ? absl::StrCat("killed by signal ", WTERMSIG(status))
                                                : absl::StrCat("exited with ", WEXITSTATUS(status))));
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InternalError(absl::StrCat(what, ": unreadable result"));
  }
  if (doc.contains("error")) {
    return absl::InternalError(absl::StrCat(what, ": ", doc["error"].get<std::string>()));
  }
  return doc["result"];
}

}  // namespace revkv::bench::store
