// Which keys a range, a delete or a txn operation names, from etcdctl's arguments: KEY alone is that
// key; KEY RANGE_END is [KEY, RANGE_END); --prefix is every key starting with KEY (every key when KEY
// is empty); --from-key is every key >= KEY.
#ifndef REVKV_CLIENTS_CLI_KEY_RANGE_H_
#define REVKV_CLIENTS_CLI_KEY_RANGE_H_

#include <string>

#include "absl/status/statusor.h"

namespace revkv::client {

struct KeySelection {
  std::string key;
  std::string range_end;  // "" for one key, as etcd's requests spell it
  bool prefix = false;
  bool from_key = false;
};

struct KeyRange {
  std::string key;        // RangeRequest.key / DeleteRangeRequest.key
  std::string range_end;  // RangeRequest.range_end / DeleteRangeRequest.range_end
};

// The smallest key greater than every key starting with `prefix` ("abc" -> "abd", "a\xff" -> "b");
// "\0" (etcd's "no upper bound") when there is none (`prefix` empty or all 0xff bytes).
std::string PrefixEnd(const std::string& prefix);

// The request fields for `selection`. INVALID_ARGUMENT when more than one of RANGE_END, --prefix and
// --from-key is given.
absl::StatusOr<KeyRange> ResolveKeyRange(const KeySelection& selection);

}  // namespace revkv::client

#endif  // REVKV_CLIENTS_CLI_KEY_RANGE_H_
