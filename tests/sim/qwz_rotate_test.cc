// ZPP_QWZ_ROTATE reaches the wire: qwZ's pieces are Hadamard-rotated before quantizing, on the
// flat and the hierarchical (hpZ) all-gather alike, every rank decodes the same weights, and the
// error stays inside the int4 budget. Off, the outputs are those of the unrotated codec.
#include <gtest/gtest.h>

#include <cmath>

#include "engine_harness.h"

namespace zpp::test {
namespace {

double RelativeL2(const CollectiveRun& run, const CollectiveSpec& spec) {
  double error = 0, norm = 0;
  const size_t ranks = run.input.size();
  for (size_t r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < spec.count; ++i) {
      const double x = run.input[r][i];
      const double y = ElementAt(run.output[0], spec.dtype, r * spec.count + i);
      error += (y - x) * (y - x);
      norm += x * x;
    }
  }
  return std::sqrt(error / norm);
}

CollectiveRun Gather(bool hpz, bool rotate) {
  plan::Settings s;
  s.qwz = true;
  s.qwz_bits = 4;
  s.block = 32;
  s.hpz = hpz;
  s.qwz_rotate = rotate;
  s.min_bytes = 0;
  CollectiveSpec spec;
  spec.count = 4096;
  spec.dtype = ncclBfloat16;
  const sim::ClusterLayout layout = sim::ClusterLayout::Uniform(2, 2);
  return RunCollective(layout, sim::ShapeOf(layout), s, spec);
}

TEST(QwzRotate, ChangesThePiecesAndStaysInsideTheInt4Budget) {
  CollectiveSpec spec;
  spec.count = 4096;
  spec.dtype = ncclBfloat16;
  for (bool hpz : {false, true}) {
    const CollectiveRun plain = Gather(hpz, false);
    const CollectiveRun rotated = Gather(hpz, true);
    ASSERT_EQ(rotated.failures, 0);
    ASSERT_TRUE(rotated.plans_agree);
    for (const auto& output : rotated.output) EXPECT_EQ(output, rotated.output[0]) << hpz;
    EXPECT_NE(rotated.output[0], plain.output[0])
        << "rotation did not reach the codec, hpz " << hpz;
    EXPECT_LT(RelativeL2(rotated, spec), 0.15) << hpz;
    EXPECT_LT(RelativeL2(plain, spec), 0.15) << hpz;
    // The same bytes on the wire: a rotated piece has the unrotated one's size.
    EXPECT_EQ(rotated.off_node_bytes, plain.off_node_bytes) << hpz;
  }
}

}  // namespace
}  // namespace zpp::test
