// The exact all-reduce's sums, bit for bit (docs/architecture.md, "The same engine on CPU
// processes"): element i is, on every rank, each node's sum of its ranks' inputs in local order,
// rounded to the dtype, then those node sums added in node order and scaled, rounded once more.
// The CPU path's speed work keeps these bytes; a changed order fails here.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "engine_harness.h"
#include "kernels/math/float_convert.h"
#include "plan/planner.h"
#include "sim/cluster_layout.h"

namespace zpp::test {
namespace {

float RoundTo(ncclDataType_t dtype, float value) {
  if (dtype == ncclBfloat16) return codec::Bf16ToFloat(codec::FloatToBf16(value));
  if (dtype == ncclFloat16) return codec::HalfToFloat(codec::FloatToHalf(value));
  return value;
}

// Element i as the documented order makes it: each node's ranks in rank order (one node: a
// single stage, rounded once).
float Reference(const CollectiveRun& run, const sim::ClusterLayout& layout, ncclDataType_t dtype,
                float scale, size_t i) {
  const int nodes = layout.node_count();
  float total = 0.0f;
  for (int k = 0; k < nodes; ++k) {
    float node = 0.0f;
    for (int rank = 0; rank < layout.world_size(); ++rank) {
      if (layout.node_of_rank[static_cast<size_t>(rank)] != k) continue;
      node += static_cast<float>(run.input[static_cast<size_t>(rank)][i]);
    }
    total += nodes == 1 ? node : RoundTo(dtype, node);
  }
  return RoundTo(dtype, total * scale);
}

std::vector<std::pair<std::string, sim::ClusterLayout>> Layouts() {
  sim::ClusterLayout interleaved;  // ranks 0 and 2 on node 0, 1 and 3 on node 1
  interleaved.node_of_rank = {0, 1, 0, 1};
  interleaved.rack_of_node = {0, 0};
  return {{"2x2", sim::ClusterLayout::Uniform(2, 2)},
          {"3x2", sim::ClusterLayout::Uniform(3, 2)},
          {"1x4", sim::ClusterLayout::Uniform(1, 4)},
          {"interleaved 2x2", interleaved}};
}

TEST(PlainAllReduceTest, SumsInTheDocumentedOrderBitForBit) {
  for (const auto& [name, layout] : Layouts()) {
    for (ncclDataType_t dtype : {ncclFloat32, ncclBfloat16, ncclFloat16}) {
      for (int variant = 0; variant < 3; ++variant) {  // sum, pre-multiplied sum, sum in place
        CollectiveSpec spec;
        spec.op = plan::CollectiveOp::kAllReduce;
        spec.count = 3001 + 512 * static_cast<size_t>(layout.world_size());  // a padded tail
        spec.dtype = dtype;
        spec.reduction = variant == 1 ? plan::Reduction::kPreMulSum : plan::Reduction::kSum;
        spec.premul = 0.25f;
        spec.in_place = variant == 2;
        spec.seed = 41;
        const float scale = variant == 1 ? spec.premul : 1.0f;
        const std::string where =
            name + " " + plan::DtypeName(dtype) + " variant " + std::to_string(variant);
        const CollectiveRun run =
            RunCollective(layout, sim::ShapeOf(layout), plan::Settings{}, spec);
        ASSERT_EQ(run.failures, 0) << where;
        for (size_t rank = 0; rank < run.output.size(); ++rank) {
          for (size_t i = 0; i < spec.count; ++i) {
            const float want = Reference(run, layout, dtype, scale, i);
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
