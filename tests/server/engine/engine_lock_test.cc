// The data directory's LOCK file: it holds the holder's pid and description, and a second process
// refused the directory is told who holds it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "server/engine/engine.h"
#include "tests/server/engine/engine_test_util.h"

namespace revkv::server {
namespace {

using engine_testing::Options;
using engine_testing::TempDir;

TEST(EngineLock, TheLockFileNamesItsHolderAndASecondOpenIsToldWho) {
  const std::string dir = TempDir("lock_holder");
  ASSERT_CHILD_PASSES([&] {
    EngineOptions o = Options(dir);
    o.lock_owner = "revkv-server, member 'first'";
    auto engine = Engine::Open(o, nullptr);
    CHILD_CHECK(engine.ok(), "%s", engine.status().ToString().c_str());
    std::ifstream lock(dir + "/LOCK");
    std::string text((std::istreambuf_iterator<char>(lock)), std::istreambuf_iterator<char>());
    const std::string expected = std::to_string(getpid()) + " revkv-server, member 'first'\n";
    CHILD_CHECK(text == expected, "LOCK holds '%s'", text.c_str());
    // A second open (flock is per open file description, so it conflicts within a process too).
    EngineOptions second = Options(dir);
    second.lock_owner = "revkv-server, member 'second'";
    auto refused = Engine::Open(second, nullptr);
    CHILD_CHECK(!refused.ok() && absl::IsFailedPrecondition(refused.status()), "second open");
    const std::string message(refused.status().message());
    const std::string holder =
        "is held by pid " + std::to_string(getpid()) + " (revkv-server, member 'first')";
    CHILD_CHECK(message.find(holder) != std::string::npos, "message: %s", message.c_str());
    CHILD_CHECK((*engine)->Close().ok(), "close");
    return 0;
  });
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace revkv::server
