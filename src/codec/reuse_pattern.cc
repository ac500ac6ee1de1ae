#include "codec/reuse_pattern.h"

#include "kernels/math/fingerprint_math.h"
#include "kernels/math/reuse_pattern_math.h"

namespace zpp::codec {

Result ReusePattern(std::span<const uint64_t> fingerprints, uint64_t seed,
                    std::span<int32_t> pattern, uint64_t* hash) {
  ZPP_CHECK_ARG(hash != nullptr, "codec::ReusePattern: hash is null" ZPP_BUG_REPORT);
  ZPP_CHECK_ARG(pattern.size() == fingerprints.size(),
                "codec::ReusePattern: %zu pattern slots for %zu fingerprints" ZPP_BUG_REPORT,
                pattern.size(), fingerprints.size());
  uint64_t sum = ReusePatternSeedTerm(seed, fingerprints.size());
  for (size_t i = 0; i < fingerprints.size(); ++i) {
    int32_t source = -1;
    for (size_t j = FingerprintMayReuse(fingerprints[i]) ? i : 0; j-- > 0;) {
      if (fingerprints[j] == fingerprints[i]) {
        source = static_cast<int32_t>(j);
        break;
      }
    }
    pattern[i] = source;
    sum += ReusePatternTerm(i, source);
  }
  *hash = sum;
  return ncclSuccess;
}

}  // namespace zpp::codec
