// hpZ's reuse pattern of a step epoch, from the fingerprints of its all-gather shards: call i
// reuses the latest earlier call j whose shard has the same fingerprint (codec::Fingerprint,
// which covers the shard's length too), unless the shard does not vary (FingerprintMayReuse:
// constant shards of different layers are equal by coincidence until training moves one). Its hash
// is what ranks exchange to agree on the pattern: a wrapping sum of one term per call, so the
// kernel's atomics may add in any order.
#pragma once

#include <cstdint>

#include "kernels/math/hd.h"
#include "kernels/math/stochastic.h"

namespace zpp::codec {

// The term of call `index`, whose source is `source` (-1: none).
ZPP_HD uint64_t ReusePatternTerm(uint64_t index, int32_t source) {
  return Mix64(Mix64(index + 0x9FB21C651E98DF25ull) ^
               static_cast<uint64_t>(static_cast<int64_t>(source) + 1));
}

// The term that binds the hash to the host's part of the record (call count and shapes).
ZPP_HD uint64_t ReusePatternSeedTerm(uint64_t seed, uint64_t calls) {
  return Mix64(seed ^ Mix64(calls + 0xC2B2AE3D27D4EB4Full));
}

}  // namespace zpp::codec
