// The host code's two hashes, each written once: FNV-1a over bytes (host names, call signatures:
// stable across processes and builds, so ranks can compare them) and a mixing combiner for keys
// that stay inside one process. Not for the codec's random streams (kernels/math/stochastic.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace zpp {

inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;

// FNV-1a, 64-bit, one byte more.
constexpr uint64_t Fnv1a64Byte(uint64_t hash, uint8_t byte) {
  return (hash ^ byte) * 0x100000001b3ull;
}

constexpr uint64_t Fnv1a64(std::string_view bytes, uint64_t hash = kFnv1a64Offset) {
  for (char c : bytes) hash = Fnv1a64Byte(hash, static_cast<uint8_t>(c));
  return hash;
}

// The eight bytes of `value`, least significant first (the same on every rank whatever its
// byte order).
constexpr uint64_t Fnv1a64Word(uint64_t hash, uint64_t value) {
  for (int byte = 0; byte < 8; ++byte) hash = Fnv1a64Byte(hash, (value >> (8 * byte)) & 0xff);
  return hash;
}

// Folds `value` into `hash` (boost's hash_combine, then a SplitMix64 multiply to spread it).
constexpr uint64_t HashCombine(uint64_t hash, uint64_t value) {
  hash ^= value + 0x9E3779B97F4A7C15ull + (hash << 6) + (hash >> 2);
  return hash * 0xBF58476D1CE4E5B9ull;
}

}  // namespace zpp
