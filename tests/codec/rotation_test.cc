// The 32-point rotation: the butterflies equal the fp64 matrix product, the inverse undoes the
// forward, and the kernels' split of the stages (strides 1, 2, 4 inside an 8-element chunk,
// strides 8, 16 across 4 lanes; kernels/device/rotation.cuh) gives the same bits as the
// reference's loop. That last check emulates the lanes on the CPU, so it runs in CI.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>

#include "kernels/math/hadamard.h"
#include "reference.h"

namespace zpp::codec {
namespace {

using RunValues = std::array<float, 32>;

RunValues RandomRun(uint64_t seed) {
  const std::vector<double> values = testing::StudentT4(32, seed);
  RunValues run;
  for (size_t i = 0; i < 32; ++i) run[i] = static_cast<float>(values[i]);
  return run;
}

TEST(RotationTest, ForwardIsTheMatrixProductOverThirtyTwo) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    RunValues run = RandomRun(seed);
    const std::vector<double> input(run.begin(), run.end());
    const std::vector<double> expected = testing::RefRotateForward(input, 32);
    RotateForward32(run.data());
    double input_max = 0;
    for (const double value : input) input_max = std::max(input_max, std::fabs(value));
    for (size_t i = 0; i < 32; ++i) ASSERT_NEAR(run[i], expected[i], input_max * 1e-6) << i;
  }
}

TEST(RotationTest, InverseUndoesForward) {
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const RunValues original = RandomRun(seed);
    RunValues run = original;
    RotateForward32(run.data());
    RotateInverse32(run.data());
    for (size_t i = 0; i < 32; ++i) ASSERT_NEAR(run[i], original[i], 1e-5) << i;
  }
}

// Emulates rotation.cuh's lanes: lane t holds elements 8t..8t+7.
void LaneSplitHadamard(RunValues& run) {
  float lanes[4][8];
  std::memcpy(lanes, run.data(), sizeof lanes);
  for (auto& lane : lanes) HadamardStages<8>(lane);
  for (unsigned lane_bit = 1; lane_bit < 4; lane_bit <<= 1) {
    float next[4][8];
    for (unsigned lane = 0; lane < 4; ++lane) {
      const bool upper = (lane & lane_bit) != 0;
      for (int i = 0; i < 8; ++i) {
        const float own = lanes[lane][i];
        const float other = lanes[lane ^ lane_bit][i];  // __shfl_xor_sync
        next[lane][i] = ButterflyHalf(upper, own, other);
      }
    }
    std::memcpy(lanes, next, sizeof lanes);
  }
  std::memcpy(run.data(), lanes, sizeof lanes);
}

TEST(RotationTest, LaneSplitGivesTheSameBits) {
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const RunValues original = RandomRun(seed);
    RunValues reference = original;
    RotateForward32(reference.data());
    RunValues split = original;
    for (float& value : split) value *= kRotationPreScale;
    LaneSplitHadamard(split);
    ASSERT_EQ(std::memcmp(split.data(), reference.data(), sizeof(RunValues)), 0) << seed;

    RunValues inverse_reference = original;
    RotateInverse32(inverse_reference.data());
    RunValues inverse_split = original;
    LaneSplitHadamard(inverse_split);
    ASSERT_EQ(std::memcmp(inverse_split.data(), inverse_reference.data(), sizeof(RunValues)), 0);
  }
}

}  // namespace
}  // namespace zpp::codec
