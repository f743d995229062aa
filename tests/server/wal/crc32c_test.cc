// CRC-32C: known vectors, the table and SSE4.2 implementations against each other, and combination.
#include "server/wal/crc32c.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/wal/test_util.h"

namespace revkv::server {
namespace {

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(Crc32c, MatchesKnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720, B.4
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<char>(i);
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  std::string descending(32, '\0');
  for (int i = 0; i < 32; ++i) descending[i] = static_cast<char>(31 - i);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32c, PortableAndHardwareAgreeOnEveryLengthAndAlignment) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  const std::string data = RandomBytes(rng, 4096 + 8);
  EXPECT_EQ(crc32c_internal::ExtendPortable(0, "123456789", 9), 0xE3069283u);
  if (!crc32c_internal::HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  EXPECT_EQ(crc32c_internal::ExtendHardware(0, "123456789", 9), 0xE3069283u);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t len = 0; len <= 300; ++len) {
      ASSERT_EQ(crc32c_internal::ExtendPortable(0, data.data() + offset, len),
                crc32c_internal::ExtendHardware(0, data.data() + offset, len))
          << "offset " << offset << " length " << len;
    }
  }
  for (int i = 0; i < 200; ++i) {
    const size_t offset = rng() % 8;
    const size_t len = rng() % 4096;
    const uint32_t init = static_cast<uint32_t>(rng());
    ASSERT_EQ(crc32c_internal::ExtendPortable(init, data.data() + offset, len),
              crc32c_internal::ExtendHardware(init, data.data() + offset, len));
  }
}

TEST(Crc32c, ExtendEqualsOneShot) {
  const std::string s = "hello, write-ahead log";
  for (size_t split = 0; split <= s.size(); ++split) {
    EXPECT_EQ(Crc32cExtend(Crc32c(s.substr(0, split)), s.data() + split, s.size() - split), Crc32c(s));
  }
}

TEST(Crc32c, CombineEqualsChecksumOfConcatenation) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 300; ++i) {
    const std::string a = RandomBytes(rng, rng() % 200);
    const std::string b = RandomBytes(rng, i < 10 ? static_cast<size_t>(i) : rng() % 5000);
    ASSERT_EQ(Crc32cCombine(Crc32c(a), Crc32c(b), b.size()), Crc32c(a + b))
        << "|a|=" << a.size() << " |b|=" << b.size();
    ASSERT_EQ(Crc32cCombineWithShift(Crc32c(a), Crc32c(b), Crc32cShift(b.size())), Crc32c(a + b));
  }
}

TEST(Crc32c, CombineHandlesLargeLengthsWithoutTouchingTheBytes) {
  // 3 MiB of zeros: CRC(zeros) extended, versus combination with the closed-form shift.
  const std::string zeros(3 << 20, '\0');
  const std::string head = "prefix";
  EXPECT_EQ(Crc32cCombine(Crc32c(head), Crc32c(zeros), zeros.size()), Crc32c(head + zeros));
}

// Lengths of 512 MiB (2^29 bytes, 2^32 bits) and more, as a checkpoint's body reaches: the shift for
// such a length needs x^(2^k) mod P for k >= 32, which is not x^(2^(k-32)) (the order of x modulo the
// Castagnoli polynomial does not divide 2^32 - 1). The bytes are a random 1 MiB block repeated, checked
// against extending over them (one pass for all lengths), so no buffer of that size is needed. Past
// 4 GiB (bit 32 of the length) only at full scale: the sanitizer stages check up to 513 MiB.
TEST(Crc32c, CombineIsExactForLengthsOfHalfAGibibyteAndMore) {
  std::mt19937_64 rng(testing::TestSeed());
  const std::string block = RandomBytes(rng, 1 << 20);
  const std::string head = RandomBytes(rng, 37);
  std::vector<uint64_t> checked = {511, 512, 513};
  if (testing::Scale() >= 1) checked.push_back(4097);
  uint32_t body = 0;
  uint32_t whole = Crc32c(head);
  uint64_t blocks = 0;
  for (const uint64_t until : checked) {
    for (; blocks < until; ++blocks) {
      body = Crc32cExtend(body, block.data(), block.size());
      whole = Crc32cExtend(whole, block.data(), block.size());
    }
    EXPECT_EQ(Crc32cCombine(Crc32c(head), body, blocks << 20), whole) << blocks << " MiB";
  }
}

}  // namespace
}  // namespace revkv::server
