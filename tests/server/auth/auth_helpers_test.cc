// Unit tests of the Auth service's helpers (server/auth): bcrypt passwords through crypt(3), and etcd's
// simple tokens (their form, their table: TTL renewal and expiry, invalidation).
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "server/auth/password.h"
#include "server/auth/simple_token.h"

namespace revkv::server::auth {
namespace {

TEST(Password, BcryptHashesVerifyAndAreSaltedAtRandom) {
  absl::StatusOr<std::string> a = HashPassword("s3cret", kMinBcryptCost);
  absl::StatusOr<std::string> b = HashPassword("s3cret", kMinBcryptCost);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->substr(0, 7), "$2b$04$");
  EXPECT_NE(*a, *b);  // a fresh salt each time
  EXPECT_TRUE(CheckPassword("s3cret", *a));
  EXPECT_TRUE(CheckPassword("s3cret", *b));
  EXPECT_FALSE(CheckPassword("s3cret!", *a));
  EXPECT_FALSE(CheckPassword("", *a));
  EXPECT_FALSE(CheckPassword("s3cret", "not a hash"));
  EXPECT_FALSE(CheckPassword("s3cret", ""));
}

// etcd stores $2a$ hashes (Go's bcrypt): the system's crypt verifies them (jBCrypt's test vectors).
TEST(Password, EtcdsTwoAHashesVerify) {
  EXPECT_TRUE(CheckPassword("", "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s."));
  EXPECT_TRUE(CheckPassword("abc", "$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i"));
  EXPECT_FALSE(CheckPassword("abd", "$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i"));
}

// crypt(3) stops at a NUL byte and bcrypt reads 72 bytes: such passwords are refused, not truncated.
TEST(Password, PasswordsCryptWouldTruncateAreRefused) {
  EXPECT_EQ(HashPassword(std::string("ab\0cd", 5), kMinBcryptCost).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HashPassword(std::string(73, 'x'), kMinBcryptCost).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::string> ok = HashPassword(std::string(72, 'x'), kMinBcryptCost);
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE(CheckPassword(std::string("ab\0cd", 5), *ok));
}

TEST(SimpleToken, ParsesEtcdsFormOnly) {
  auto t = ParseSimpleToken("abcdefghijklmnop.42");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->prefix, "abcdefghijklmnop");
  EXPECT_EQ(t->index, 42);
  EXPECT_EQ(ParseSimpleToken("x.-7")->index, -7);  // Go's Atoi takes a sign
  EXPECT_EQ(ParseSimpleToken("x.+7")->index, 7);
  EXPECT_EQ(ParseSimpleToken(".0")->prefix, "");
  EXPECT_EQ(ParseSimpleToken("x.9223372036854775807")->index, INT64_MAX);
  EXPECT_EQ(ParseSimpleToken("x.-9223372036854775808")->index, INT64_MIN);
  for (const char* bad : {"", "x", "x.", "x.a", "x.1.2", "x.9223372036854775808", "x.-9223372036854775809",
                          "x.+", "x.-", "x.+-1", "x. 1", "x.1 ", "x.0x10"}) {
    EXPECT_FALSE(ParseSimpleToken(bad).has_value()) << bad;
  }
}

TEST(SimpleToken, TokensLiveWhileUsedExpireUnusedAndGoWithTheirUser) {
  auto now = std::chrono::steady_clock::time_point();
  SimpleTokens tokens(std::chrono::seconds(10), [&] { return now; });
  const std::string a = tokens.Assign("alice", 5);
  const std::string b = tokens.Assign("bob", 6);
  EXPECT_EQ(a.size(), kSimpleTokenLetters + 2);
  EXPECT_EQ(a.substr(kSimpleTokenLetters), ".5");
  EXPECT_EQ(tokens.Lookup(a), std::optional<std::string>("alice"));
  EXPECT_FALSE(tokens.Lookup(a.substr(0, kSimpleTokenLetters) + ".6").has_value());  // forged index
  EXPECT_FALSE(tokens.Lookup("abcdefghijklmnop.5").has_value());                     // never handed out
  now += std::chrono::seconds(9);
  EXPECT_TRUE(tokens.Lookup(a).has_value());  // used: renewed for another 10 s
  now += std::chrono::seconds(9);
  EXPECT_TRUE(tokens.Lookup(a).has_value());
  EXPECT_FALSE(tokens.Lookup(b).has_value());  // unused for 18 s: expired
  tokens.InvalidateUser("alice");
  EXPECT_FALSE(tokens.Lookup(a).has_value());
  const std::string c = tokens.Assign("carol", 1);
  const std::string d = tokens.Assign("dave", 1);
  tokens.InvalidateUser("");  // every token (AuthDisable)
  EXPECT_FALSE(tokens.Lookup(c).has_value());
  EXPECT_FALSE(tokens.Lookup(d).has_value());
  EXPECT_EQ(tokens.size(), 0u);
}

TEST(SimpleToken, TokensAreRandomLetters) {
  SimpleTokens tokens(std::chrono::seconds(10));
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string t = tokens.Assign("u", 1);
    for (size_t j = 0; j < kSimpleTokenLetters; ++j)
      EXPECT_TRUE(std::isalpha(static_cast<unsigned char>(t[j])));
    EXPECT_TRUE(seen.insert(t.substr(0, kSimpleTokenLetters)).second);
  }
}

}  // namespace
}  // namespace revkv::server::auth
