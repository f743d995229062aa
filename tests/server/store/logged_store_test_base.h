// A test fixture base: a Store over a real log in a fresh directory, in this process's runtime.
#ifndef REVKV_TESTS_SERVER_STORE_LOGGED_STORE_TEST_BASE_H_
#define REVKV_TESTS_SERVER_STORE_LOGGED_STORE_TEST_BASE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "runtime/heap/heap.h"
#include "runtime/safepoint/safepoint.h"
#include "server/store/store.h"
#include "server/wal/wal.h"

namespace revkv::server {

class LoggedStoreTestBase : public ::testing::Test {
 protected:
  // Starts the runtime, registers this thread as `name`, and opens a store over a log in a fresh
  // directory named after `name` and the process. `wal_options` is used as given, but for its `dir`.
  // Revision 1 is the empty store: the log starts at revision 2, as the engine opens it.
  void OpenStore(const std::string& name, WalOptions wal_options) {
    runtime::HeapOptions o;
    o.max_heap_bytes = size_t{1} << 30;
    runtime::InitializeRuntime(o);
    registration_.emplace(name);
    dir_ = (std::filesystem::temp_directory_path() / ("revkv-" + name + "-" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(dir_);
    wal_options.dir = dir_;
    auto wal = Wal::Open(
        wal_options, 1, [](int64_t, std::string_view) { return absl::OkStatus(); }, nullptr);
    ASSERT_TRUE(wal.ok()) << wal.status();
    wal_ = std::move(*wal);
    auto s = Store::Create(StoreOptions(), wal_.get());
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  // Closes the store and its log (a clean close), leaves the runtime and removes the directory.
  void CloseStore() {
    store_.reset();
    if (wal_ != nullptr) {
      EXPECT_TRUE(wal_->Close().ok());
    }
    wal_.reset();
    registration_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<Wal> wal_;
  std::optional<runtime::ThreadRegistration> registration_;
  std::unique_ptr<Store> store_;
};

}  // namespace revkv::server

#endif  // REVKV_TESTS_SERVER_STORE_LOGGED_STORE_TEST_BASE_H_
