// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of WAL records and checkpoints.
//
// Crc32c() values are the standard ones: initial value ~0, final xor ~0, so Crc32c("123456789") is
// 0xE3069283. Crc32cExtend continues a checksum over more bytes; Crc32cCombine joins two checksums
// without touching the bytes again. On x86-64 CPUs with SSE4.2 the crc32 instruction is used (chosen at
// run time); elsewhere a slicing-by-8 table.
//
// Thread-safety: all functions are thread-safe (pure functions over the caller's bytes).
#ifndef REVKV_SERVER_WAL_CRC32C_H_
#define REVKV_SERVER_WAL_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace revkv::server {

// Returns the CRC-32C of `data` appended to bytes whose CRC-32C is `crc` (use 0 for no prefix).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

// Returns the CRC-32C of `data`.
inline uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data.data(), data.size()); }

// Returns the CRC-32C of A||B given crc_a = CRC(A), crc_b = CRC(B) and |B| = size_b. O(log size_b).
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b);

// Crc32cCombine in two steps, so the part that depends only on |B| can be computed ahead of time:
// Crc32cCombineWithShift(a, b, Crc32cShift(n)) == Crc32cCombine(a, b, n). The second step is a few dozen
// shifts and xors and touches no memory.
uint32_t Crc32cShift(uint64_t size_b);
uint32_t Crc32cCombineWithShift(uint32_t crc_a, uint32_t crc_b, uint32_t shift);

// The two implementations behind Crc32cExtend, exposed so tests can hold them against each other.
namespace crc32c_internal {
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t size);
// Requires HardwareAvailable().
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t size);
// True when this CPU has the SSE4.2 crc32 instruction.
bool HardwareAvailable();
}  // namespace crc32c_internal

}  // namespace revkv::server

#endif  // REVKV_SERVER_WAL_CRC32C_H_
