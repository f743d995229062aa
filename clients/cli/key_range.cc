// Key ranges from etcdctl-style arguments.
#include "clients/cli/key_range.h"

namespace revkv::client {

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    unsigned char& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

absl::StatusOr<KeyRange> ResolveKeyRange(const KeySelection& selection) {
  const int ways = int{!selection.range_end.empty()} + int{selection.prefix} + int{selection.from_key};
  if (ways > 1) {
    return absl::InvalidArgumentError("give only one of RANGE_END, --prefix and --from-key");
  }
  KeyRange range{.key = selection.key, .range_end = selection.range_end};
  if (selection.prefix) {
    // etcd reads key "\0" with range_end "\0" as every key; an empty key would be rejected.
    if (range.key.empty()) range.key = std::string(1, '\0');
    range.range_end = PrefixEnd(selection.key);
  } else if (selection.from_key) {
    if (range.key.empty()) range.key = std::string(1, '\0');
    range.range_end = std::string(1, '\0');
  }
  return range;
}

}  // namespace revkv::client
