// hpZ's reuse pattern on the CPU (kernels/math/reuse_pattern_math.h): the reference the sim backend
// runs and the CUDA kernel matches bit for bit.
#pragma once

#include <cstdint>
#include <span>

#include "log/check.h"

namespace zpp::codec {

// pattern[i] = the latest j < i with fingerprints[j] == fingerprints[i], else -1 (always -1 for
// a shard that does not vary: FingerprintMayReuse); *hash = the
// pattern's hash bound to `seed` (pattern.size() == fingerprints.size()).
Result ReusePattern(std::span<const uint64_t> fingerprints, uint64_t seed,
                    std::span<int32_t> pattern, uint64_t* hash);

}  // namespace zpp::codec
