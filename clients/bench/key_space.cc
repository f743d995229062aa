// Key spelling for the benchmark's key space.
#include "clients/bench/key_space.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace revkv::client {
namespace {

int DecimalDigits(uint64_t value) {
  int digits = 1;
  while (value >= 10) {
    value /= 10;
    ++digits;
  }
  return digits;
}

}  // namespace

absl::StatusOr<KeySpace> KeySpace::Create(std::string prefix, int key_size, uint64_t size) {
  if (size == 0) return absl::InvalidArgumentError("the key space needs at least one key");
  const int needed = static_cast<int>(prefix.size()) + DecimalDigits(size);
  if (key_size < needed) {
    return absl::InvalidArgumentError(absl::StrCat("--key-size ", key_size, " is too small for ", size,
                                                   " keys with prefix \"", prefix, "\" (need ", needed, ")"));
  }
  KeySpace space;
  space.prefix_ = std::move(prefix);
  space.key_size_ = key_size;
  space.size_ = size;
  return space;
}

void KeySpace::Format(uint64_t index, std::string* out) const {
  out->resize(key_size_);
  char* data = out->data();
  std::memcpy(data, prefix_.data(), prefix_.size());
  for (int i = key_size_ - 1; i >= static_cast<int>(prefix_.size()); --i) {
    data[i] = static_cast<char>('0' + index % 10);
    index /= 10;
  }
}

std::string KeySpace::Key(uint64_t index) const {
  std::string key;
  Format(index, &key);
  return key;
}

std::string KeySpace::PrefixEnd() const {
  std::string end = prefix_;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(end.back() + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // an empty or all-0xff prefix: every key from the first
}

}  // namespace revkv::client
