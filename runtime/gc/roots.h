// The global root table (internal): every GlobalRoot, for the major collector.
#pragma once

#include <mutex>
#include <vector>

#include "runtime/gc/gc.h"

namespace revkv::runtime {

// Thread-safe; the collector reads the list with the world stopped while holding the mutex.
class GlobalRootTable {
 public:
  static GlobalRootTable& Get();
  void Add(GlobalRoot* root);
  void Remove(GlobalRoot* root);
  std::mutex& mutex() { return mu_; }
  const std::vector<GlobalRoot*>& roots() const { return roots_; }  // with mutex() held

 private:
  std::mutex mu_;
  std::vector<GlobalRoot*> roots_;  // guarded by mu_
};

}  // namespace revkv::runtime
