// hpZ's reuse pattern on the CPU (codec/reuse_pattern.h): the latest earlier equal fingerprint,
// and a hash that tells patterns apart but not the fingerprints behind them.
#include "codec/reuse_pattern.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace zpp::codec {
namespace {

std::vector<int32_t> PatternOf(const std::vector<uint64_t>& fingerprints, uint64_t* hash,
                               uint64_t seed = 7) {
  std::vector<int32_t> pattern(fingerprints.size(), 99);
  EXPECT_EQ(ReusePattern(fingerprints, seed, pattern, hash), ncclSuccess);
  return pattern;
}

TEST(ReusePatternTest, EachCallReusesTheLatestEarlierEqualFingerprint) {
  uint64_t hash = 0;
  // A forward over layers a b c, a backward c b a, an extra gather of b.
  const std::vector<uint64_t> fingerprints = {11, 22, 33, 33, 22, 11, 22};
  EXPECT_EQ(PatternOf(fingerprints, &hash), (std::vector<int32_t>{-1, -1, -1, 2, 1, 0, 4}));
}

TEST(ReusePatternTest, HashFollowsThePatternNotTheFingerprints) {
  uint64_t a = 0, b = 0, c = 0, seeded = 0;
  PatternOf({1, 2, 2, 1}, &a);
  PatternOf({8, 9, 9, 8}, &b);  // other shards (another rank), same pattern
  PatternOf({1, 2, 1, 2}, &c);  // another pattern
  PatternOf({1, 2, 2, 1}, &seeded, /*seed=*/8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, seeded);
  uint64_t shorter = 0;
  PatternOf({1, 2, 2}, &shorter);
  EXPECT_NE(a, shorter);
}

TEST(ReusePatternTest, BadArguments) {
  std::vector<uint64_t> fingerprints(3);
  std::vector<int32_t> pattern(2);
  uint64_t hash = 0;
  EXPECT_EQ(ReusePattern(fingerprints, 0, pattern, &hash), ncclInvalidArgument);
  pattern.resize(3);
  EXPECT_EQ(ReusePattern(fingerprints, 0, pattern, nullptr), ncclInvalidArgument);
}

}  // namespace
}  // namespace zpp::codec
