// libFuzzer target: etcd's simple tokens (server/auth/simple_token.h). The input is a token as a client
// would send it in the "token" metadata field.
//
// Checks, beyond no crash, leak or undefined behaviour:
//   - ParseSimpleToken accepts exactly etcd's form (one '.', then a decimal integer as Go's strconv.Atoi
//     takes it, within 64 bits), as an independent reading with std::from_chars decides; the index it
//     returns is that integer and the prefix the bytes before the dot;
//   - a token table that handed out one token names a user for that token only: the input, unless it is
//     that very token, names nobody, and neither does the handed-out token once its user is invalidated
//     or its TTL has passed unused.
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "server/auth/simple_token.h"
#include "tests/fuzz/fuzz_check.h"

namespace revkv::server::fuzz {
namespace {

// Go's strconv.Atoi over `text`, read independently of the parser under test.
std::optional<int64_t> ReferenceAtoi(std::string_view text) {
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
    if (!text.empty() && (text[0] == '+' || text[0] == '-')) return std::nullopt;
  }
  if (text.empty() || text == "-") return std::nullopt;
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, value, 10);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return value;
}

void Run(const uint8_t* data, size_t size) {
  const std::string_view token(reinterpret_cast<const char*>(data), size);
  const std::optional<auth::SimpleToken> parsed = auth::ParseSimpleToken(token);
  const size_t dot = token.find('.');
  const bool one_dot = dot != std::string_view::npos && token.find('.', dot + 1) == std::string_view::npos;
  const std::optional<int64_t> expected = one_dot ? ReferenceAtoi(token.substr(dot + 1)) : std::nullopt;
  FUZZ_CHECK(parsed.has_value() == expected.has_value(), "ParseSimpleToken %s a token the reference %s",
             parsed.has_value() ? "accepted" : "refused", expected.has_value() ? "accepts" : "refuses");
  if (parsed.has_value()) {
    FUZZ_CHECK(parsed->index == *expected, "index %lld, expected %lld", static_cast<long long>(parsed->index),
               static_cast<long long>(*expected));
    FUZZ_CHECK(parsed->prefix == token.substr(0, dot), "the prefix is not the bytes before the dot");
  }

  // A table with one token handed out, on a clock the test moves.
  auto now = std::chrono::steady_clock::time_point();
  auth::SimpleTokens tokens(std::chrono::seconds(300), [&now] { return now; });
  const int64_t index = size > 0 ? static_cast<int64_t>(data[0]) - 100 : 7;
  const std::string issued = tokens.Assign("alice", index);
  FUZZ_CHECK(issued.size() > auth::kSimpleTokenLetters && issued[auth::kSimpleTokenLetters] == '.',
             "issued token %s", issued.c_str());
  const std::optional<auth::SimpleToken> reparsed = auth::ParseSimpleToken(issued);
  FUZZ_CHECK(reparsed.has_value() && reparsed->index == index, "an issued token does not parse back");
  const std::optional<std::string> user = tokens.Lookup(token);
  FUZZ_CHECK(user.has_value() == (token == issued), "the input %s a user",
             user.has_value() ? "named" : "did not name");
  FUZZ_CHECK(tokens.Lookup(issued) == std::optional<std::string>("alice"), "the issued token lost its user");
  // Used within its TTL, it lives on; unused past it, it is gone.
  now += std::chrono::seconds(299);
  FUZZ_CHECK(tokens.Lookup(issued).has_value(), "a token used within its TTL expired");
  now += std::chrono::seconds(301);
  FUZZ_CHECK(!tokens.Lookup(issued).has_value(), "a token unused past its TTL still names a user");
  const std::string again = tokens.Assign("alice", index);
  tokens.InvalidateUser(size % 2 == 0 ? "alice" : "");
  FUZZ_CHECK(!tokens.Lookup(again).has_value(), "an invalidated token still names a user");
  FUZZ_CHECK(tokens.size() == 0, "%zu tokens left", tokens.size());
}

}  // namespace
}  // namespace revkv::server::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  revkv::server::fuzz::Run(data, size);
  return 0;
}
