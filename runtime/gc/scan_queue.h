// The work list of an evacuating collection: the spans of to-space written so far, scanned in
// allocation order (Cheney's algorithm, with no extra memory per object), plus a stack of objects
// that did not move but still need their fields scanned (pinned, large, promoted in place).
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/heap/heap.h"

namespace revkv::runtime {

class ScanQueue {
 public:
  // Records that an object of `size` bytes was copied to `p`.
  void NoteCopy(char* p, size_t size) {
    if (!spans_.empty() && spans_.back().end == p) {
      spans_.back().end += size;
      return;
    }
    spans_.push_back(Span{p, p + size});
    if (spans_.size() == 1) scan_ = p;
  }
  // Queues an object that stays in place.
  void PushInPlace(Object* o) { in_place_.push_back(o); }

  // Calls scan(Object*) on every queued object, including those queued by scan itself, until none is
  // left.
  template <class F>
  void Drain(F&& scan) {
    for (;;) {
      if (span_ < spans_.size()) {
        if (scan_ < spans_[span_].end) {
          auto* o = reinterpret_cast<Object*>(scan_);
          scan_ += o->size();
          scan(o);
          continue;
        }
        if (span_ + 1 < spans_.size()) {
          ++span_;
          scan_ = spans_[span_].start;
          continue;
        }
      }
      if (!in_place_.empty()) {
        Object* o = in_place_.back();
        in_place_.pop_back();
        scan(o);
        continue;
      }
      return;
    }
  }

 private:
  struct Span {
    char* start;
    char* end;
  };
  std::vector<Span> spans_;
  size_t span_ = 0;
  char* scan_ = nullptr;
  std::vector<Object*> in_place_;
};

}  // namespace revkv::runtime
