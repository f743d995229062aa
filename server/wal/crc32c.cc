// CRC-32C: a slicing-by-8 table implementation, an SSE4.2 implementation, and checksum combination.
//
// Combination works on polynomials modulo P in the reflected bit order the CRC itself uses (bit 31 is the
// coefficient of x^0). CRC(A||B) = CRC(A) * x^(8|B|) mod P  xor  CRC(B); the factor x^(8|B|) mod P is
// built by square-and-multiply from a table of x^(2^k) mod P. This file is also the only place that knows
// about the x86 instruction (kept here rather than in a port file because nothing else needs it).
#include "server/wal/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace revkv::server {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // Castagnoli, reflected

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// tables[0] is the classic byte-at-a-time table; tables[k][b] advances tables[k-1][b] by one zero byte,
// so eight bytes are folded with eight independent lookups.
constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    tables[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 1; k < 8; ++k) {
      const uint32_t prev = tables[k - 1][b];
      tables[k][b] = (prev >> 8) ^ tables[0][prev & 0xFF];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

inline uint32_t LoadLittleEndian32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;  // revkv supports little-endian hosts only (see wal_format.h)
}

// Returns a*b mod P in the reflected representation.
constexpr uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) {
      product ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    b = (b & 1) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// kPowers[k] = x^(2^k) mod P, for every k a shift of a 64-bit byte count needs (bit 63 of the count is
// k = 66, the factor 8 counted). The sequence does not repeat with period 32: the multiplicative order of
// x modulo the Castagnoli polynomial does not divide 2^32 - 1, so x^(2^32) != x and a table of 32 wrapped
// around gave wrong checksums for lengths of 2^29 bytes (512 MiB) and more.
constexpr int kPowerCount = 64 + 3;
constexpr std::array<uint32_t, kPowerCount> MakePowers() {
  std::array<uint32_t, kPowerCount> powers{};
  uint32_t p = 1u << 30;  // x^1
  for (int k = 0; k < kPowerCount; ++k) {
    powers[k] = p;
    p = MultiplyModP(p, p);
  }
  return powers;
}

constexpr std::array<uint32_t, kPowerCount> kPowers = MakePowers();

using ExtendFunction = uint32_t (*)(uint32_t, const void*, size_t);

ExtendFunction ChooseExtend() {
  return crc32c_internal::HardwareAvailable() ? &crc32c_internal::ExtendHardware
                                              : &crc32c_internal::ExtendPortable;
}

}  // namespace

namespace crc32c_internal {

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t l = ~crc;
  while (size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    l = kTables[0][(l ^ *p++) & 0xFF] ^ (l >> 8);
    --size;
  }
  while (size >= 8) {
    const uint32_t lo = l ^ LoadLittleEndian32(p);
    const uint32_t hi = LoadLittleEndian32(p + 4);
    l = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
        kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    l = kTables[0][(l ^ *p++) & 0xFF] ^ (l >> 8);
    --size;
  }
  return ~l;
}

#if defined(__x86_64__)

__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t l = ~crc & 0xFFFFFFFFu;
  while (size > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    l = _mm_crc32_u8(static_cast<uint32_t>(l), *p++);
    --size;
  }
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    l = _mm_crc32_u64(l, word);
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    l = _mm_crc32_u8(static_cast<uint32_t>(l), *p++);
    --size;
  }
  return ~static_cast<uint32_t>(l);
}

bool HardwareAvailable() { return __builtin_cpu_supports("sse4.2"); }

#else

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t size) {
  return ExtendPortable(crc, data, size);
}

bool HardwareAvailable() { return false; }

#endif

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  static const ExtendFunction extend = ChooseExtend();
  return extend(crc, data, size);
}

uint32_t Crc32cShift(uint64_t size_b) {
  uint32_t p = 1u << 31;  // x^0
  // x^(8n) = product of x^(2^k) over the set bits k of 8n; start at k = 3 for the factor 8.
  for (unsigned k = 3; size_b != 0; size_b >>= 1, ++k) {
    if (size_b & 1) p = MultiplyModP(kPowers[k], p);
  }
  return p;
}

uint32_t Crc32cCombineWithShift(uint32_t crc_a, uint32_t crc_b, uint32_t shift) {
  return MultiplyModP(shift, crc_a) ^ crc_b;
}

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  return Crc32cCombineWithShift(crc_a, crc_b, Crc32cShift(size_b));
}

}  // namespace revkv::server
