// Tests of the request-head parser: what it accepts, what it rejects and with which status, and that it
// asks for more bytes only when more bytes could make a valid request.
#include "server/ops/http_parser.h"

#include <string>

#include "gtest/gtest.h"

namespace revkv::server::http {
namespace {

using Status = ParsedRequest::Status;

ParsedRequest Parse(std::string_view text, ParseLimits limits = {}) { return ParseRequestHead(text, limits); }

TEST(HttpParser, CompleteGetWithHeadersAndQuery) {
  const std::string text =
      "GET /debug/gc?format=json&x=a%20b+c&flag HTTP/1.1\r\nHost: localhost\r\nUser-Agent:  curl/8 "
      "\r\n\r\nNEXT";
  const ParsedRequest parsed = Parse(text);
  ASSERT_EQ(parsed.status, Status::kComplete) << parsed.error_message;
  EXPECT_EQ(parsed.head_bytes, text.size() - 4);
  EXPECT_EQ(parsed.request.method, "GET");
  EXPECT_EQ(parsed.request.target, "/debug/gc?format=json&x=a%20b+c&flag");
  EXPECT_EQ(parsed.request.path, "/debug/gc");
  EXPECT_EQ(parsed.request.Query("format"), "json");
  EXPECT_EQ(parsed.request.Query("x"), "a b c");
  EXPECT_EQ(parsed.request.Query("flag", "absent"), "");
  EXPECT_EQ(parsed.request.Query("missing", "fallback"), "fallback");
  EXPECT_EQ(parsed.request.Header("user-agent"), "curl/8");
  EXPECT_EQ(parsed.request.Header("HOST"), "localhost");
  EXPECT_EQ(parsed.request.version_minor, 1);
  EXPECT_TRUE(parsed.keep_alive);
  EXPECT_FALSE(parsed.has_body);
}

TEST(HttpParser, IncompleteUntilTheBlankLine) {
  const std::string text = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (size_t n = 0; n < text.size(); ++n) {
    EXPECT_EQ(Parse(text.substr(0, n)).status, Status::kIncomplete) << "prefix of " << n << " bytes";
  }
  EXPECT_EQ(Parse(text).status, Status::kComplete);
}

TEST(HttpParser, AcceptsBareLineFeedsAndLeadingBlankLines) {
  const ParsedRequest parsed = Parse("\r\n\nGET / HTTP/1.1\nHost: x\n\n");
  ASSERT_EQ(parsed.status, Status::kComplete) << parsed.error_message;
  EXPECT_EQ(parsed.request.path, "/");
}

TEST(HttpParser, ConnectionSemantics) {
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, Close\r\n\r\n").keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").keep_alive);  // 1.0: close unless asked, Host optional
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
}

TEST(HttpParser, BodyMeansNoKeepAlive) {
  ParsedRequest parsed = Parse("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
  ASSERT_EQ(parsed.status, Status::kComplete);
  EXPECT_TRUE(parsed.has_body);
  EXPECT_FALSE(parsed.keep_alive);
  parsed = Parse("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_TRUE(parsed.has_body);
  parsed = Parse("GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_FALSE(parsed.has_body);
  EXPECT_TRUE(parsed.keep_alive);
}

TEST(HttpParser, AbsoluteFormTarget) {
  ParsedRequest parsed = Parse("GET http://localhost:2381/metrics?a=1 HTTP/1.1\r\nHost: localhost\r\n\r\n");
  ASSERT_EQ(parsed.status, Status::kComplete) << parsed.error_message;
  EXPECT_EQ(parsed.request.path, "/metrics");
  EXPECT_EQ(parsed.request.Query("a"), "1");
  parsed = Parse("GET http://localhost HTTP/1.1\r\nHost: localhost\r\n\r\n");
  ASSERT_EQ(parsed.status, Status::kComplete) << parsed.error_message;
  EXPECT_EQ(parsed.request.path, "/");
}

struct BadCase {
  const char* name;
  std::string text;
  int status;
};

TEST(HttpParser, RejectsMalformedHeads) {
  const BadCase cases[] = {
      {"no version", "GET /\r\n\r\n", 400},
      {"double space", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"lower-case version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400},
      {"HTTP/2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
      {"relative target", "GET metrics HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"asterisk target", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"missing host", "GET / HTTP/1.1\r\n\r\n", 400},
      {"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"space before colon", "GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
      {"no colon", "GET / HTTP/1.1\r\nHost x\r\n\r\n", 400},
      {"obsolete folding", "GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  2\r\n\r\n", 400},
      {"NUL in header", std::string("GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n", 29), 400},
      {"bad content length", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", 400},
      {"conflicting lengths", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
       400},
      {"bad percent escape", "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"encoded NUL", "GET /a%00 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"bad query escape", "GET /a?x=%4 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
  };
  for (const BadCase& c : cases) {
    const ParsedRequest parsed = Parse(c.text);
    EXPECT_EQ(parsed.status, Status::kError) << c.name;
    EXPECT_EQ(parsed.error_status, c.status) << c.name << ": " << parsed.error_message;
  }
}

TEST(HttpParser, GarbageIsRejectedBeforeTheLineEnds) {
  // Neither has a line feed yet: a plausible prefix waits, garbage fails at once.
  EXPECT_EQ(Parse("GET /metr").status, Status::kIncomplete);
  EXPECT_EQ(Parse("\x16\x03\x01\x02\x00\x01").status, Status::kError);  // a TLS ClientHello
  EXPECT_EQ(Parse(std::string("\0\0\0\0", 4)).status, Status::kError);
  EXPECT_EQ(Parse("{\"json\": true}").status, Status::kError);
  EXPECT_EQ(Parse(" GET / HTTP/1.1").status, Status::kError);
  EXPECT_EQ(Parse("GET / HTTP/1.1\r\nHost: x\r\nBad\x01").status, Status::kError);
}

TEST(HttpParser, HeadTooLargeIs431) {
  ParseLimits limits;
  limits.max_header_bytes = 1024;
  const std::string big_header = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2000, 'a');
  ParsedRequest parsed = Parse(big_header, limits);  // no end of line yet, already too large
  EXPECT_EQ(parsed.status, Status::kError);
  EXPECT_EQ(parsed.error_status, 431);
  parsed = Parse(big_header + "\r\n\r\n", limits);
  EXPECT_EQ(parsed.error_status, 431);
  const std::string long_target = "GET /" + std::string(2000, 'a');
  EXPECT_EQ(Parse(long_target, limits).error_status, 431);
}

TEST(HttpParser, TooManyHeadersIs431) {
  ParseLimits limits;
  limits.max_headers = 3;
  std::string text = "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n";
  EXPECT_EQ(Parse(text, limits).status, Status::kComplete);
  text = "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
  EXPECT_EQ(Parse(text, limits).error_status, 431);
}

TEST(HttpParser, PercentDecode) {
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
