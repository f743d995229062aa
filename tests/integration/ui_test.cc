// The ops endpoint's /ui in a real browser: headless Chromium (Debian's chromium) loads the page from a
// running revkv-server while a client writes, and the page's charts fill with data: each chart's
// figure says how many samples it drew and how many pixels its lines coloured, the status line names
// the store's revision, and a screenshot is taken.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "etcdserverpb/rpc.grpc.pb.h"
#include "revkv/v1/admin.grpc.pb.h"
#include "tests/integration/etcd_calls.h"
#include "tests/integration/server_process.h"
#include "tests/support/external_tools.h"

namespace revkv::integration {
namespace {

constexpr char kChromium[] = "/usr/bin/chromium";

// Runs headless Chromium on `url` with `extra` arguments; a profile of its own in `dir`.
CommandResult Chromium(const std::string& dir, const std::string& url,
                       const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {kChromium, "--headless",
                                   "--no-sandbox",  // tests run as root
                                   "--disable-gpu", "--no-first-run", "--user-data-dir=" + dir + "/profile",
                                   "--window-size=1200,1100",
                                   // virtual time: the page's one-second timer fires about 20 times, the
                                   // fetches it makes being real (each chart's line is then long enough
                                   // to ink its 100 pixels even where a slow, sanitizer-built server
                                   // makes some fetches miss their tick)
                                   "--virtual-time-budget=20000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  return RunCommand(argv, "", {}, std::chrono::seconds(180));
}

// The value of attribute `name` of the element with id `id` in `dom` ("" if absent).
std::string Attribute(const std::string& dom, const std::string& id, const std::string& name) {
  const size_t at = dom.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const size_t end = dom.find('>', at);
  const std::string tag = dom.substr(at, end - at);
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex(name + "=\"([^\"]*)\""))) return "";
  return m[1];
}

class Ui : public ::testing::Test {
 protected:
  void SetUp() override {
    REVKV_NEED_TOOL(kChromium, "chromium");
    ASSERT_TRUE(server_.Start());
    channel_ = server_.NewChannel();
  }
  ServerProcess server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(Ui, TheChartsRenderLiveDataInABrowser) {
  // The page alone: HTML, self-contained (nothing from another origin, no external script or style).
  const HttpResponse page = HttpGet(server_.metrics_port(), "/ui");
  ASSERT_EQ(page.status, 200) << page.error;
  EXPECT_EQ(page.Header("content-type"), "text/html; charset=utf-8");
  for (const char* external : {"http://", "https://", "src=", "<link", "@import", "url("}) {
    EXPECT_EQ(page.body.find(external), std::string::npos) << external;
  }

  // Load: writes (STM commits, request latencies, nursery collections) and a few full collections.
  auto admin = ::revkv::v1::Admin::NewStub(channel_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        IsOk(Call(admin.get(), &::revkv::v1::Admin::Stub::Collect, ::revkv::v1::CollectRequest()).status));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> puts{0};
  std::thread writer([&] {
    auto kv = etcdserverpb::KV::NewStub(channel_);
    for (int i = 0; !stop.load(); ++i) {
      if (IsOk(Call(kv.get(), &etcdserverpb::KV::Stub::Put,
                    PutOf("ui/" + std::to_string(i % 500), std::string(200, 'v')))
                   .status)) {
        puts.fetch_add(1);
      }
    }
  });
  const std::string url = "http://127.0.0.1:" + std::to_string(server_.metrics_port()) + "/ui";
  const CommandResult dom = Chromium(server_.data_dir() + "/..", url, {"--dump-dom"});
  const CommandResult shot =
      Chromium(server_.data_dir() + "/..", url, {"--screenshot=" + server_.data_dir() + "/../ui.png"});
  stop = true;
  writer.join();
  ASSERT_EQ(dom.exit_code, 0) << dom.Describe();
  ASSERT_GT(puts.load(), 0);

  // Every chart drew samples, and its lines coloured pixels of its canvas.
  for (const char* chart :
       {"chart-gc-pauses", "chart-safepoint", "chart-heap", "chart-stm", "chart-latency"}) {
    const std::string points = Attribute(dom.out, chart, "data-points");
    const std::string inked = Attribute(dom.out, chart, "data-inked");
    ASSERT_FALSE(points.empty()) << chart << " drew nothing:\n" << dom.out;
    EXPECT_GE(std::stoi(points), 2) << chart;
    EXPECT_GT(std::stoi(inked), 100) << chart;
  }
  // The status line: the store's revision and the number of samples.
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(dom.out, m, std::regex(R"(revision (\d+), (\d+) keys; updated .*; (\d+) samples)")))
      << dom.out;
  EXPECT_GT(std::stoll(m[1]), 1);
  EXPECT_GE(std::stoi(m[3]), 3);
  // With writes going on all the while, the heap, the commits per second and the request latency
  // charts drew values above zero.
  for (const char* chart : {"chart-heap", "chart-stm", "chart-latency"}) {
    const std::string max = Attribute(dom.out, chart, "data-max");
    ASSERT_FALSE(max.empty()) << chart;
    EXPECT_GT(std::stod(max), 0) << chart;
  }

  // The screenshot: a PNG of some size.
  ASSERT_EQ(shot.exit_code, 0) << shot.Describe();
  std::ifstream png(server_.data_dir() + "/../ui.png", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(png)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 10000u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
}

}  // namespace
}  // namespace revkv::integration
