// revkv status, checkpoint and gc (stats, collect, watch) against a real server.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "absl/strings/str_split.h"
#include "tests/clients/cli/cli_fixture.h"

namespace revkv::client::testing {
namespace {

using CliAdmin = CliTest;

// Major collections so far, from `gc stats --json`.
int64_t MajorCollections(const nlohmann::json& stats) {
  for (const nlohmann::json& p : stats["gc"]["pauses"]) {
    if (p["kind"] == "MAJOR") return JsonInt(p["collections"]);
  }
  ADD_FAILURE() << "no MAJOR pause summary in " << stats;
  return -1;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST_F(CliAdmin, StatusShowsTheServerItsRevisionAndConfiguration) {
  Ok({"put", "k", "v"});
  const std::string out = Ok({"status"});
  for (const std::string& expected :
       {"endpoint        " + server_.address(), std::string("version         3.4.0+revkv."),
        std::string("revision        2\n"), std::string("errors          none\n"),
        "data dir        " + server_.data_dir() + "\n", "listen          " + server_.address() + "\n",
        std::string("fsync           always\n")}) {
    EXPECT_NE(out.find(expected), std::string::npos) << "missing \"" << expected << "\" in\n" << out;
  }
}

TEST_F(CliAdmin, StatusJsonHoldsEtcdsStatusAndRevkvsServerInfo) {
  const nlohmann::json status = Json({"status"});
  EXPECT_EQ(status["endpoint"], server_.address());
  EXPECT_EQ(status["status"]["version"].get<std::string>().rfind("3.4.0+revkv.", 0), 0u) << status;
  EXPECT_EQ(JsonInt(status["status"]["header"]["revision"]), 1);
  EXPECT_EQ(status["status"]["leader"], status["status"]["header"]["member_id"]);
  EXPECT_EQ(status["server_info"]["data_dir"], server_.data_dir());
  EXPECT_EQ(status["server_info"]["listen_address"], server_.address());
}

TEST_F(CliAdmin, CheckpointWritesAFileAtTheCurrentRevision) {
  Ok({"put", "a", "1"});
  Ok({"put", "b", "2"});
  const std::string out = Ok({"checkpoint"});
  const std::regex line(R"(checkpoint at revision 3: (\S+) \(\S+, took \S+\)\n)");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(out, match, line)) << out;
  EXPECT_TRUE(std::filesystem::exists(match[1].str())) << match[1];

  Ok({"put", "c", "3"});
  const nlohmann::json json = Json({"checkpoint"});
  EXPECT_EQ(JsonInt(json["revision"]), 4);
  EXPECT_TRUE(std::filesystem::exists(json["path"].get<std::string>())) << json;
  EXPECT_GT(JsonInt(json["bytes"]), 0);
}

TEST_F(CliAdmin, GcStatsShowsEverySection) {
  const std::string out = Ok({"gc", "stats"});
  for (const char* expected : {"collections", "minor", "local", "major", "time to safepoint", "safepoints",
                               "heap", "committed", "nursery", "pinned", "stm", "commits (writes)",
                               "aborts: read conflict", "store", "revision", "keys"}) {
    EXPECT_NE(out.find(expected), std::string::npos) << "missing \"" << expected << "\" in\n" << out;
  }
  const nlohmann::json json = Json({"gc", "stats"});
  EXPECT_EQ(json["gc"]["pauses"].size(), 3u) << json;
  EXPECT_GT(JsonInt(json["heap"]["max_bytes"]), 0);
  EXPECT_TRUE(json["stm"].contains("aborts_doomed_by_gc"));
  EXPECT_EQ(JsonInt(json["store"]["revision"]), 1);
}

TEST_F(CliAdmin, GcCollectAddsOneMajorCollectionToGcStats) {
  const int64_t before = MajorCollections(Json({"gc", "stats"}));
  const std::string out = Ok({"gc", "collect"});
  EXPECT_EQ(out.rfind("major collection #" + std::to_string(before + 1) + ": pause ", 0), 0u) << out;
  EXPECT_EQ(MajorCollections(Json({"gc", "stats"})), before + 1);

  const nlohmann::json collect = Json({"gc", "collect"});
  EXPECT_EQ(collect["event"]["kind"], "MAJOR");
  EXPECT_EQ(JsonInt(collect["event"]["sequence"]), before + 2);
  const nlohmann::json stats = Json({"gc", "stats", "--recent", "8"});
  EXPECT_EQ(MajorCollections(stats), before + 2);
  ASSERT_FALSE(stats["recent"].empty()) << stats;
  EXPECT_EQ(stats["recent"].back()["kind"], "MAJOR");
  EXPECT_NE(Ok({"gc", "stats", "--recent", "8"}).find("requested"), std::string::npos);
}

TEST_F(CliAdmin, GcWatchToAPipePrintsOnePlainLinePerRefresh) {
  Ok({"gc", "collect"});
  const CommandResult r = CliAttached({"gc", "watch", "--count", "2", "--interval", "200ms"}, Attach::kPipes);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "escape sequences on a pipe:\n" << r.out;
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const std::string& l : lines) {
    for (const char* expected :
         {" gc/s minor=", " major=", "pause p50/p99/max", " tts=", "heap committed=", " nursery=", " old=",
          " large=", " free=", " pinned=", "stm commits/s=", "aborts/s read-conflict="}) {
      EXPECT_NE(l.find(expected), std::string::npos) << "missing \"" << expected << "\" in " << l;
    }
  }
}

TEST_F(CliAdmin, GcWatchJsonPrintsOneObjectPerRefresh) {
  const CommandResult r =
      CliAttached({"--json", "gc", "watch", "--count", "3", "--interval", "100ms"}, Attach::kPipes);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const std::string& l : lines) {
    const nlohmann::json frame = nlohmann::json::parse(l, nullptr, false);
    ASSERT_FALSE(frame.is_discarded()) << l;
    EXPECT_GT(frame["interval_seconds"].get<double>(), 0.05) << l;
    EXPECT_TRUE(frame["collections_per_second"].contains("major")) << l;
    EXPECT_TRUE(frame["pauses"]["minor"].contains("p99_nanos")) << l;
    EXPECT_GT(frame["heap"]["max_bytes"].get<uint64_t>(), 0u) << l;
    EXPECT_TRUE(frame["stm"]["aborts_per_second"].contains("validation")) << l;
    EXPECT_TRUE(frame["recent_pause_nanos"].is_array()) << l;
  }
}

TEST_F(CliAdmin, GcWatchOnATerminalRedrawsInPlace) {
  Ok({"gc", "collect"});
  const CommandResult r = CliAttached({"gc", "watch", "--count", "2", "--interval", "200ms"}, Attach::kPty);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_NE(r.out.find("\x1b[2J"), std::string::npos) << "the screen is not cleared";
  size_t redraws = 0;
  for (size_t at = r.out.find("\x1b[H"); at != std::string::npos; at = r.out.find("\x1b[H", at + 1))
    ++redraws;
  EXPECT_EQ(redraws, 2u) << r.out;
  EXPECT_NE(r.out.find("\x1b[?25h"), std::string::npos) << "the cursor is not shown again";
  for (const char* expected : {"COLLECTIONS", "to safepoint", "HEAP committed", "nursery", "pinned",
                               "STM commits", "aborts/s", "RECENT PAUSES", "█"}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << "missing \"" << expected << "\" in\n" << r.out;
  }
}

}  // namespace
}  // namespace revkv::client::testing
