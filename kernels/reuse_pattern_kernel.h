// hpZ's reuse pattern as device work (src/backend/backend.h, ReusePattern): once per step
// epoch, over the fingerprints its all-gathers wrote, so the host never waits for them.
// Nothing allocates, synchronizes or calls back: it captures.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "log/check.h"

namespace zpp::codec::gpu {

// pattern[i] = the latest j < i with fingerprints[j] == fingerprints[i], else -1; *hash as
// codec::ReusePattern computes it (codec/math/reuse_pattern_math.h).
Result ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed, int32_t* pattern,
                    uint64_t* hash, cudaStream_t stream);

}  // namespace zpp::codec::gpu
