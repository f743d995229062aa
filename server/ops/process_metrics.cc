// process_* metrics from /proc/self (process_metrics.h).
#include "server/ops/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace revkv::server {
namespace {

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The system's boot time in seconds since the epoch (the "btime" line of /proc/stat); 0 if unknown.
double BootTime() {
  std::istringstream in(ReadAll("/proc/stat"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

uint64_t CountOpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  uint64_t n = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n > 0 ? n - 1 : 0;  // the directory stream's own descriptor
}

}  // namespace

std::optional<ProcessStats> ReadProcessStats() {
  // /proc/self/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses, so the fields
  // are counted from the last ')'. After it, field 3 (state) is index 0: utime is field 14, stime 15,
  // starttime 22, vsize 23, rss 24.
  const std::string stat = ReadAll("/proc/self/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f;
  for (std::string field; fields >> field;) f.push_back(field);
  if (f.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  ProcessStats s;
  try {
    s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    s.start_time_seconds = BootTime() + std::stod(f[19]) / ticks;
    s.virtual_bytes = std::stoull(f[20]);
    s.resident_bytes = std::stoull(f[21]) * page;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  s.open_fds = CountOpenFds();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) s.max_fds = limit.rlim_cur;
  return s;
}

void AddProcessCollector(MetricsRegistry& registry) {
  registry.AddCollector([](MetricWriter& w) {
    const std::optional<ProcessStats> s = ReadProcessStats();
    if (!s) return;
    w.WriteCounter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                   s->cpu_seconds);
    w.WriteGauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                 static_cast<double>(s->resident_bytes));
    w.WriteGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                 static_cast<double>(s->virtual_bytes));
    w.WriteGauge("process_open_fds", "Number of open file descriptors.", static_cast<double>(s->open_fds));
    w.WriteGauge("process_max_fds", "Maximum number of open file descriptors.",
                 static_cast<double>(s->max_fds));
    w.WriteGauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                 s->start_time_seconds);
  });
}

}  // namespace revkv::server
