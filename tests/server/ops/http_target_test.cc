// The request target as handlers see it: path and query split and decoded, origin-form and absolute-form
// accepted, everything else refused with the reason.
#include "server/ops/http_target.h"

#include <string>

#include "gtest/gtest.h"

namespace revkv::server::http {
namespace {

TEST(HttpTarget, PathAndQueryAreSplitAndDecoded) {
  HttpRequest request;
  ASSERT_EQ(ParseTarget("/debug/gc?format=json&x=a%20b+c&flag", &request), std::nullopt);
  EXPECT_EQ(request.path, "/debug/gc");
  EXPECT_EQ(request.Query("format"), "json");
  EXPECT_EQ(request.Query("x"), "a b c");
  EXPECT_EQ(request.Query("flag", "absent"), "");
  EXPECT_EQ(request.Query("missing", "fallback"), "fallback");
  HttpRequest fragment;
  ASSERT_EQ(ParseTarget("/a%2Fb?q=1#frag", &fragment), std::nullopt);
  EXPECT_EQ(fragment.path, "/a/b");
  EXPECT_EQ(fragment.Query("q"), "1");
}

TEST(HttpTarget, AbsoluteFormTarget) {
  HttpRequest request;
  ASSERT_EQ(ParseTarget("http://localhost:2381/metrics?a=1", &request), std::nullopt);
  EXPECT_EQ(request.path, "/metrics");
  EXPECT_EQ(request.Query("a"), "1");
  HttpRequest bare;
  ASSERT_EQ(ParseTarget("http://localhost", &bare), std::nullopt);
  EXPECT_EQ(bare.path, "/");
}

TEST(HttpTarget, RefusesWhatIsNotAPathOrHasBadEscapes) {
  for (const char* target : {"metrics", "*", "ftp://host/x", "/a%zz", "/a%00", "/a?x=%4"}) {
    HttpRequest request;
    EXPECT_NE(ParseTarget(target, &request), std::nullopt) << target;
  }
}

TEST(HttpTarget, PercentDecode) {
  std::string out;
  EXPECT_TRUE(PercentDecode("a%2Fb%2fc+d", false, &out));
  EXPECT_EQ(out, "a/b/c+d");
  EXPECT_TRUE(PercentDecode("a+b", true, &out));
  EXPECT_EQ(out, "a b");
  EXPECT_FALSE(PercentDecode("%", false, &out));
  EXPECT_FALSE(PercentDecode("%4", false, &out));
  EXPECT_FALSE(PercentDecode("%g0", false, &out));
}

}  // namespace
}  // namespace revkv::server::http
