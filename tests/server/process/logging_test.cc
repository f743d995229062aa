// The log's JSON lines: escaping of anything a message may hold, and the formats as written to stderr
// (captured through a pipe), including a multi-line message and gRPC's own messages.
#include "server/process/logging.h"

#include <grpc/support/log.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "nlohmann/json.hpp"
#include "runtime/port/diagnostics.h"
#include "spdlog/spdlog.h"

namespace revkv::server {
namespace {

std::string Escaped(std::string_view text) {
  std::string out;
  AppendJsonEscaped(text, out);
  return out;
}

TEST(JsonEscaping, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Escaped("plain text"), "plain text");
  EXPECT_EQ(Escaped("a \"quoted\" \\ path"), "a \\\"quoted\\\" \\\\ path");
  EXPECT_EQ(Escaped("two\nlines\r\tand\x01\x1f\x7f"), "two\\nlines\\r\\tand\\u0001\\u001f\\u007f");
  EXPECT_EQ(Escaped(std::string("nul\0byte", 8)), "nul\\u0000byte");
}

TEST(JsonEscaping, KeepsValidUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(Escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(Escaped("\xff"), "\\ufffd");
  EXPECT_EQ(Escaped("\xc3"), "\\ufffd");                        // truncated sequence
  EXPECT_EQ(Escaped("\xc0\xaf"), "\\ufffd\\ufffd");             // overlong '/'
  EXPECT_EQ(Escaped("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");  // a surrogate
  // Whatever the bytes, the result parses as a JSON string.
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  nlohmann::json parsed;
  EXPECT_NO_THROW(parsed = nlohmann::json::parse("\"" + Escaped(all) + "\""));
  EXPECT_TRUE(parsed.is_string());
}

// Runs `body` with stderr redirected into a pipe; returns what was written.
template <class Body>
std::string CaptureStderr(Body body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const int saved = dup(2);
  dup2(fds[1], 2);
  body();
  spdlog::default_logger()->flush();
  dup2(saved, 2);
  close(saved);
  close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) out.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  return out;
}

TEST(Logging, JsonFormatWritesOneObjectPerLineForEveryLogger) {
  const std::string out = CaptureStderr([] {
    SetUpLogging(LogLevel::kDebug, LogFormat::kJson);
    spdlog::info("configuration:\nname \"x\"\nlisten 127.0.0.1:2379\n");
    spdlog::warn("a\\b\x01");
    gpr_log(GPR_ERROR, "a message of gRPC's with \"quotes\"");
    spdlog::trace("below the level: not written");
  });
  std::istringstream lines(out);
  std::vector<nlohmann::json> entries;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_NO_THROW(entries.push_back(nlohmann::json::parse(line))) << line;
  }
  ASSERT_EQ(entries.size(), 3u) << out;
  EXPECT_EQ(entries[0]["msg"], "configuration:\nname \"x\"\nlisten 127.0.0.1:2379\n");
  EXPECT_EQ(entries[0]["level"], "info");
  EXPECT_EQ(entries[0]["logger"], "revkv");
  EXPECT_EQ(entries[1]["msg"], "a\\b\x01");
  EXPECT_EQ(entries[1]["level"], "warning");
  EXPECT_EQ(entries[2]["logger"], "grpc");
  EXPECT_EQ(entries[2]["level"], "error");
  EXPECT_NE(entries[2]["msg"].get<std::string>().find("logging_test.cc:"), std::string::npos) << entries[2];
  EXPECT_NE(entries[2]["msg"].get<std::string>().find("a message of gRPC's with \"quotes\""),
            std::string::npos);
  for (const nlohmann::json& e : entries) {
    EXPECT_TRUE(e["time"].is_string() && e["thread"].is_number()) << e;
  }
}

// The runtime's warnings (a thread late for a stop-the-world) come out as log lines, and a fatal error
// as one flushed critical line before the abort: with JSON logs, each is one JSON object.
TEST(Logging, TheRuntimesWarningsAndFatalErrorsAreLogLines) {
  const std::string out = CaptureStderr([] {
    SetUpLogging(LogLevel::kInfo, LogFormat::kJson);
    runtime::port::Warn("revkv runtime: stop-the-world has waited %.1f ms for thread '%s'", 12.5, "w\"1");
  });
  std::istringstream lines(out);
  std::string line;
  ASSERT_TRUE(std::getline(lines, line)) << out;
  nlohmann::json entry;
  ASSERT_NO_THROW(entry = nlohmann::json::parse(line)) << line;
  EXPECT_EQ(entry["level"], "warning");
  EXPECT_EQ(entry["msg"], "revkv runtime: stop-the-world has waited 12.5 ms for thread 'w\"1'");
  EXPECT_FALSE(std::getline(lines, line)) << out;

  EXPECT_DEATH(
      {
        SetUpLogging(LogLevel::kInfo, LogFormat::kJson);
        runtime::port::Fatal("revkv runtime: %s on thread '%s'", "allocation", "worker-0");
      },
      R"(\{"time":"[^"]+","level":"critical","logger":"revkv","thread":[0-9]+,)"
      R"("msg":"revkv runtime: allocation on thread 'worker-0'"\})");
}

// An exception nothing catches ends the process through std::terminate: its message is a critical log
// line first (one JSON object with JSON logs), flushed before the abort.
TEST(Logging, AnUncaughtExceptionIsALogLineBeforeTheAbort) {
  EXPECT_DEATH(
      {
        SetUpLogging(LogLevel::kInfo, LogFormat::kJson);
        std::thread([] { throw std::runtime_error("boom \"quoted\""); }).join();
      },
      R"(\{"time":"[^"]+","level":"critical","logger":"revkv","thread":[0-9]+,)"
      R"("msg":"std::terminate called after an uncaught exception: boom \\"quoted\\""\})");
}

TEST(Logging, TextFormatIsOneLinePerMessageWithLevelAndThread) {
  const std::string out = CaptureStderr([] {
    SetUpLogging(LogLevel::kInfo, LogFormat::kText);
    spdlog::info("hello");
    gpr_log(GPR_ERROR, "from gRPC");
  });
  EXPECT_NE(out.find(" I ["), std::string::npos) << out;
  EXPECT_NE(out.find("] hello\n"), std::string::npos) << out;
  EXPECT_NE(out.find(" E ["), std::string::npos) << out;
  EXPECT_NE(out.find("from gRPC"), std::string::npos) << out;
}

}  // namespace
}  // namespace revkv::server
