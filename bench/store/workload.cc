// Keys, values, clock and /proc readers of revkv-bench-store (workload.h).
#include "bench/store/workload.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace revkv::bench::store {

void FormatKey(uint64_t i, char* out) {
  static constexpr char kPrefix[] = "key/";
  std::copy(kPrefix, kPrefix + 4, out);
  for (size_t d = kKeyBytes; d > 4; --d) {
    out[d - 1] = static_cast<char>('0' + i % 10);
    i /= 10;
  }
}

std::string Key(uint64_t i) {
  std::string k(kKeyBytes, '\0');
  FormatKey(i, k.data());
  return k;
}

std::string Value(uint64_t i) {
  // "value/", the key's digits, then letters that depend on i: no two keys share a value.
  std::string v = "value/" + Key(i).substr(4);
  for (size_t j = v.size(); j < kValueBytes; ++j) v.push_back(static_cast<char>('a' + (i * 7 + j) % 26));
  return v;
}

uint64_t NowNanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmRSS:  1234 kB"
  }
  return 0;
}

std::string FileSystemOf(const std::string& path) {
  std::error_code ec;
  const std::string target = std::filesystem::weakly_canonical(path, ec).string();
  std::ifstream mounts("/proc/self/mounts");
  std::string line, best_device, best_mount, best_type;
  while (std::getline(mounts, line)) {
    std::istringstream fields(line);
    std::string device, mount, type;
    if (!(fields >> device >> mount >> type)) continue;
    const bool contains =
        target == mount || mount == "/" ||
        (target.rfind(mount, 0) == 0 && target.size() > mount.size() && target[mount.size()] == '/');
    // Later lines win at equal length: they are mounted over the earlier ones.
    if (contains && mount.size() >= best_mount.size()) {
      best_device = device;
      best_mount = mount;
      best_type = type;
    }
  }
  if (best_type.empty()) return "unknown file system";
  return best_type + " " + best_device + " mounted on " + best_mount;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint64_t Quantile(std::vector<uint64_t>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace revkv::bench::store
