// The 64-bit fingerprint of a byte buffer (hpZ verification): the wrapping sum, mod 2^64, of one
// hash per 8-byte word and one of the length. A sum of independent terms gives the same value
// in any order and any split, so a parallel reduction (atomics in any order) equals the serial
// loop bit for bit. Word i is bytes [8i, 8i + 8) of the buffer, little-endian, the last one
// zero-padded; hashing the index with the word makes swapped words change the sum, and the
// length term tells a buffer from the same buffer with trailing zero bytes.
//
// Bit 0 is not part of the sum (every term is even): it says whether the buffer *varies*, that
// is, whether some byte differs from the byte 8 places before it (a buffer of 8 bytes or fewer
// never varies). A buffer that does not vary repeats its first word, as a constant tensor of any
// element size does (LayerNorm weights all ones, zero biases): hpZ never derives reuse from the
// equality of such shards (kernels/math/reuse_pattern_math.h), because different layers hold them
// alike until training moves one of them, at any step. Adding even terms never carries into
// bit 0, so setting it (an atomic OR) commutes with the atomic sum on the device.
#pragma once

#include <cstdint>

#include "kernels/math/hd.h"
#include "kernels/math/stochastic.h"

namespace zpp::codec {

inline constexpr uint64_t kFingerprintVaries = 1;  // bit 0 (above)

ZPP_HD uint64_t FingerprintWord(uint64_t index, uint64_t word) {
  return Mix64(word ^ Mix64(index + 0xD1B54A32D192ED03ull)) & ~kFingerprintVaries;
}

ZPP_HD uint64_t FingerprintLength(uint64_t bytes) {
  return Mix64(bytes ^ 0xA0761D6478BD642Full) & ~kFingerprintVaries;
}

// Whether word `index` (of `valid` bytes: 8, or fewer for the last one) breaks the repetition of
// `first`, the buffer's first word.
ZPP_HD bool FingerprintWordVaries(uint64_t word, uint64_t first, uint64_t valid) {
  const uint64_t mask = valid >= 8 ? ~0ull : (1ull << (8 * valid)) - 1;
  return ((word ^ first) & mask) != 0;
}

// Whether hpZ may derive reuse from this fingerprint's equality with another.
ZPP_HD bool FingerprintMayReuse(uint64_t fingerprint) {
  return (fingerprint & kFingerprintVaries) != 0;
}

}  // namespace zpp::codec
