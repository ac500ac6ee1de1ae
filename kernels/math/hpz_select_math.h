// hpZ's choice, on the device, of the secondary partition a hit sends (src/engine/hpz_cache.h):
// the host lists the epoch's kept fills of the hit's (count, dtype), the planned one first; the
// device takes the first whose shard fingerprint equals the rank's current shard's. The host
// never learns the choice (contract 3): a shifted call sequence among calls of one size reads
// the right layer's partition instead of failing verification. Shared by the CPU reference (the
// sim backend) and the CUDA kernel, so both choose alike.
#pragma once

#include <cstdint>

#include "kernels/math/hd.h"
#include "kernels/math/stochastic.h"

namespace zpp::codec {

// A kernel argument (about 650 bytes, under CUDA's 4 KiB), so a captured graph holds it by value.
inline constexpr uint32_t kMaxHpzCandidates = 32;

struct HpzCandidates {
  uint32_t count = 0;
  int32_t position[kMaxHpzCandidates] = {};                // the fill's call in the epoch
  const uint64_t* fingerprint[kMaxHpzCandidates] = {};     // its shard's fingerprint (device)
  const unsigned char* partition[kMaxHpzCandidates] = {};  // its secondary partition (device)
};

// The first candidate whose fingerprint equals `now`, or -1 (then the hit sends NaN).
ZPP_HD int HpzChoose(const HpzCandidates& candidates, uint64_t now) {
  for (uint32_t i = 0; i < candidates.count && i < kMaxHpzCandidates; ++i) {
    if (*candidates.fingerprint[i] == now) return static_cast<int>(i);
  }
  return -1;
}

// What a hit adds to the rank's choice sum (wrapping): the fill chosen at call `hit`, by its
// position (-1: none). Every rank makes the same hits, so ranks that chose alike have equal sums;
// the sums travel in the epoch record and ranks whose sums differ are reported.
ZPP_HD uint32_t HpzChoiceTerm(uint32_t hit, int32_t chosen_position) {
  return static_cast<uint32_t>(
      Mix64(Mix64(hit + 0x94D049BB133111EBull) ^
            static_cast<uint64_t>(static_cast<int64_t>(chosen_position) + 1)) >>
      32);
}

// The byte a hit with no matching fill sends in every byte of its partition: 0xFFFF and
// 0xFFFFFFFF are NaN in bf16, fp16 and fp32, and a NaN scale decodes a whole qwZ block to NaN.
inline constexpr unsigned char kHpzPoisonByte = 0xFF;

// The counters a hit updates, in host-visible device memory: failures (no fill matched), then
// the choice sum.
inline constexpr int kHpzFailuresCounter = 0;
inline constexpr int kHpzChoicesCounter = 1;

}  // namespace zpp::codec
