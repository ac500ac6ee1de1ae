// The random bits of stochastic rounding: a counter-based hash, so any element's bits can be
// computed on its own, in any order, on any device, and a rerun gives the same bits.
//
// The stream is keyed by (seed, rank, step epoch) once per call (StreamKey), then by the block
// index (BlockKey) and the element's index inside the block (ElementBits). The block index is
// the piece's first block plus the block's index in the piece (Rounding::first_block), so a
// tensor quantized in several pieces draws the same bits as quantized at once.
#pragma once

#include <cstdint>

#include "kernels/math/hd.h"

namespace zpp::codec {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a bijection with full avalanche.
ZPP_HD uint64_t Mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

inline constexpr uint64_t kGolden64 = 0x9E3779B97F4A7C15ull;

ZPP_HD uint64_t StreamKey(uint64_t seed, uint32_t rank, uint64_t epoch) {
  uint64_t key = Mix64(seed + kGolden64);
  key = Mix64(key ^ (static_cast<uint64_t>(rank) + 0x632BE59BD9B4E019ull));
  return Mix64(key ^ (epoch * kGolden64 + 0x8CB92BA72F3D8DD7ull));
}

// SplitMix64's own step: the block index is the counter.
ZPP_HD uint64_t BlockKey(uint64_t stream_key, uint64_t block) {
  return Mix64(stream_key + (block + 1u) * kGolden64);
}

// 32 bits for one element: a bijection of the element index under the block's key (odd
// multiply, xor, add, then murmur3's fmix32), so no two elements of a block share their bits.
ZPP_HD uint32_t ElementBits(uint64_t block_key, uint32_t element) {
  uint32_t x = (static_cast<uint32_t>(block_key) ^ (element * 0x9E3779B9u)) +
               static_cast<uint32_t>(block_key >> 32);
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

}  // namespace zpp::codec
