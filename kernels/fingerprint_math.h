// The 64-bit fingerprint of a byte buffer (hpZ verification): the wrapping sum, mod 2^64, of one
// hash per 8-byte word and one of the length. A sum of independent terms gives the same value
// in any order and any split, so a parallel reduction (atomics in any order) equals the serial
// loop bit for bit. Word i is bytes [8i, 8i + 8) of the buffer, little-endian, the last one
// zero-padded; hashing the index with the word makes swapped words change the sum, and the
// length term tells a buffer from the same buffer with trailing zero bytes.
#pragma once

#include <cstdint>

#include "kernels/hd.h"
#include "kernels/stochastic.h"

namespace zpp::codec {

ZPP_HD uint64_t FingerprintWord(uint64_t index, uint64_t word) {
  return Mix64(word ^ Mix64(index + 0xD1B54A32D192ED03ull));
}

ZPP_HD uint64_t FingerprintLength(uint64_t bytes) { return Mix64(bytes ^ 0xA0761D6478BD642Full); }

}  // namespace zpp::codec
