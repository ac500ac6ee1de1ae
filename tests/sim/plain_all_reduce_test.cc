// The exact all-reduce's sums, bit for bit (docs/architecture.md, "The same engine on CPU
// processes"): element i is, on every rank, each node's sum of its ranks' inputs in local order,
// rounded to the dtype, then those node sums added in node order and scaled, rounded once more.
// The CPU path's speed work keeps these bytes; a changed order fails here.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "codec/math/float_convert.h"
#include "engine_harness.h"
#include "plan/planner.h"
#include "sim/cluster_layout.h"

namespace zpp::test {
namespace {

float RoundTo(ncclDataType_t dtype, float value) {
  if (dtype == ncclBfloat16) return codec::Bf16ToFloat(codec::FloatToBf16(value));
  if (dtype == ncclFloat16) return codec::HalfToFloat(codec::FloatToHalf(value));
  return value;
}

// Element i as the documented order makes it, on a layout whose ranks sit node by node (one
// node: a single stage, rounded once).
float Reference(const CollectiveRun& run, ncclDataType_t dtype, int nodes, int per_node,
                float scale, size_t i) {
  float total = 0.0f;
  for (int k = 0; k < nodes; ++k) {
    float node = 0.0f;
    for (int l = 0; l < per_node; ++l) {
      node += static_cast<float>(run.input[static_cast<size_t>(k * per_node + l)][i]);
    }
    total += nodes == 1 ? node : RoundTo(dtype, node);  // one node: one flat stage
  }
  return RoundTo(dtype, total * scale);
}

TEST(PlainAllReduceTest, SumsInTheDocumentedOrderBitForBit) {
  for (auto [nodes, per_node] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{1, 4}}) {
    const sim::ClusterLayout layout = sim::ClusterLayout::Uniform(nodes, per_node);
    for (ncclDataType_t dtype : {ncclFloat32, ncclBfloat16, ncclFloat16}) {
      for (plan::Reduction reduction : {plan::Reduction::kSum, plan::Reduction::kPreMulSum}) {
        CollectiveSpec spec;
        spec.op = plan::CollectiveOp::kAllReduce;
        spec.count = 3001 + 512 * static_cast<size_t>(layout.world_size());  // a padded tail
        spec.dtype = dtype;
        spec.reduction = reduction;
        spec.premul = 0.25f;
        spec.seed = 41;
        const float scale = reduction == plan::Reduction::kPreMulSum ? spec.premul : 1.0f;
        const std::string where = std::to_string(nodes) + "x" + std::to_string(per_node) + " " +
                                  plan::DtypeName(dtype) + (scale != 1.0f ? " premul" : " sum");
        const CollectiveRun run =
            RunCollective(layout, sim::ShapeOf(layout), plan::Settings{}, spec);
        ASSERT_EQ(run.failures, 0) << where;
        for (size_t rank = 0; rank < run.output.size(); ++rank) {
          for (size_t i = 0; i < spec.count; ++i) {
            const float want = Reference(run, dtype, nodes, per_node, scale, i);
            const float got = static_cast<float>(ElementAt(run.output[rank], dtype, i));
            ASSERT_EQ(std::memcmp(&want, &got, sizeof want), 0)
                << where << " rank " << rank << " element " << i << ": " << got << ", the order "
                << "gives " << want;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace zpp::test
