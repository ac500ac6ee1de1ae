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
  // A forward over layers a b c, a backward c b a, an extra gather of b (odd: shards that vary).
  const std::vector<uint64_t> fingerprints = {11, 23, 33, 33, 23, 11, 23};
  EXPECT_EQ(PatternOf(fingerprints, &hash), (std::vector<int32_t>{-1, -1, -1, 2, 1, 0, 4}));
}

TEST(ReusePatternTest, HashFollowsThePatternNotTheFingerprints) {
  uint64_t a = 0, b = 0, c = 0, seeded = 0;
  PatternOf({1, 3, 3, 1}, &a);
  PatternOf({7, 9, 9, 7}, &b);  // other shards (another rank), same pattern
  PatternOf({1, 3, 1, 3}, &c);  // another pattern
  PatternOf({1, 3, 3, 1}, &seeded, /*seed=*/8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, seeded);
  uint64_t shorter = 0;
  PatternOf({1, 3, 3}, &shorter);
  EXPECT_NE(a, shorter);
}

// A shard that does not vary (bit 0 of its fingerprint clear: a constant tensor) is equal to
// other layers' by coincidence: it neither reuses nor is reused, equal or not.
TEST(ReusePatternTest, ShardsThatDoNotVaryAreNeverPaired) {
  uint64_t hash = 0, paired = 0;
  EXPECT_EQ(PatternOf({4, 5, 4, 5, 4}, &hash), (std::vector<int32_t>{-1, -1, -1, 1, -1}));
  PatternOf({5, 7, 5, 7, 5}, &paired);
  EXPECT_NE(hash, paired);
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
