// Precise roots: the per-thread Root<T> lists and the global root table (gc.h section 1).
#include "runtime/gc/roots.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "runtime/port/diagnostics.h"
#include "runtime/safepoint/thread_context.h"

namespace revkv::runtime {

namespace internal {
void LinkRoot(RootNode* node) {
  ThreadContext* self = CurrentThread();
  if (self == nullptr) {
    port::Fatal("revkv runtime: Root<> on an unregistered thread");
  }
  RootNode* head = &self->roots;
  node->prev = head;
  node->next = head->next;
  head->next->prev = node;
  head->next = node;
}

void UnlinkRoot(RootNode* node) {
  node->prev->next = node->next;
  node->next->prev = node->prev;
}
}  // namespace internal

GlobalRootTable& GlobalRootTable::Get() {
  static GlobalRootTable* table = new GlobalRootTable();
  return *table;
}

void GlobalRootTable::Add(GlobalRoot* root) {
  std::lock_guard<std::mutex> lock(mu_);
  roots_.push_back(root);
}

void GlobalRootTable::Remove(GlobalRoot* root) {
  std::lock_guard<std::mutex> lock(mu_);
  roots_.erase(std::find(roots_.begin(), roots_.end(), root));
}

GlobalRoot::GlobalRoot() { GlobalRootTable::Get().Add(this); }
GlobalRoot::~GlobalRoot() { GlobalRootTable::Get().Remove(this); }

void GlobalRoot::Store(Object* value) {
  if (value != nullptr && IsInNursery(value)) {
    port::Fatal("revkv runtime: GlobalRoot::Store of a nursery object");
  }
  value_.store(value, std::memory_order_release);
}

}  // namespace revkv::runtime
