// Every plan x dtype x bit width x size x topology on the simulated cluster. Lossless paths must
// be bitwise equal to plain; lossy ones inside the codec's per-element bound (all-gather) or the
// error budget against an fp64 reference from the mode's settings (reduce-scatter, qgz_budget.h);
// every rank's all-gather output the same; the bytes each rank sends off its node exactly what the
// planner predicted, never more than plain NCCL's ring.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine_harness.h"
#include "qgz_budget.h"
#include "zpp/format.h"

namespace zpp::test {
namespace {

using plan::CollectiveOp;
using plan::PlanKind;
using sim::ClusterLayout;

struct Topology {
  std::string name;
  ClusterLayout layout;
};

ClusterLayout Layout(std::vector<int> node_of_rank, std::vector<int> rack_of_node) {
  ClusterLayout layout;
  layout.node_of_rank = std::move(node_of_rank);
  layout.rack_of_node = std::move(rack_of_node);
  return layout;
}

std::vector<Topology> Topologies() {
  return {
      {"1node_x4", ClusterLayout::Uniform(1, 4)},
      {"2nodes_x1", ClusterLayout::Uniform(2, 1)},
      {"2nodes_x4", ClusterLayout::Uniform(2, 4)},
      {"4nodes_x2", ClusterLayout::Uniform(4, 2)},
      {"2racks_x2nodes_x2", ClusterLayout::Uniform(4, 2, 2)},
      {"2nodes_x8", ClusterLayout::Uniform(2, 8)},
      {"uneven_3_4", Layout({0, 0, 0, 1, 1, 1, 1}, {0, 0})},
      {"interleaved_2x2", Layout({0, 1, 0, 1}, {0, 0})},
  };
}

// |y - x| <= amax(block) / (2 qmax) + the output's rounding, per element of every shard.
void ExpectWithinBlockBound(const CollectiveRun& run, const CollectiveSpec& spec, int block,
                            int bits, const std::string& where) {
  const double qmax = bits == 8 ? ZPP_INT8_QMAX : ZPP_INT4_QMAX;
  int reported = 0;
  for (size_t r = 0; r < run.input.size(); ++r) {
    const std::vector<double>& shard = run.input[r];
    for (size_t start = 0; start < spec.count; start += block) {
      const size_t end = std::min(spec.count, start + block);
      double amax = 0;
      for (size_t i = start; i < end; ++i) amax = std::max(amax, std::abs(shard[i]));
      for (size_t i = start; i < end; ++i) {
        const double y = ElementAt(run.output[0], spec.dtype, r * spec.count + i);
        const double bound =
            amax / (2 * qmax) * (1 + 1e-6) + std::abs(y) * HalfUlpRelative(spec.dtype) + 1e-30;
        if (std::abs(y - shard[i]) > bound && reported++ < 3) {
          ADD_FAILURE() << where << ": rank " << r << " element " << i << ": " << y << " vs "
                        << shard[i] << " (bound " << bound << ")";
        }
      }
    }
  }
}

double RelativeL2(const CollectiveRun& run, const CollectiveSpec& spec, double scale) {
  double err = 0, ref = 0;
  const size_t n = run.input.size();
  for (size_t r = 0; r < n; ++r) {
    for (size_t i = 0; i < spec.count; ++i) {
      double exact = 0;
      for (size_t s = 0; s < n; ++s) exact += run.input[s][r * spec.count + i];
      exact *= scale;
      const double got = ElementAt(run.output[r], spec.dtype, i);
      err += (got - exact) * (got - exact);
      ref += exact * exact;
    }
  }
  return ref == 0 ? std::sqrt(err) : std::sqrt(err / ref);
}

void CheckRun(const Topology& topology, const MatrixMode& mode, const CollectiveSpec& spec) {
  const plan::Shape shape = sim::ShapeOf(topology.layout);
  const CollectiveRun run = RunCollective(topology.layout, shape, mode.settings, spec);
  const std::string where = topology.name + " " + mode.name + " " +
                            (spec.op == CollectiveOp::kAllGather ? "allgather" : "reducescatter") +
                            " dtype " + std::to_string(spec.dtype) + " count " +
                            std::to_string(spec.count) + (spec.in_place ? " in-place" : "") +
                            " plan " + std::string(plan::PlanKindName(run.plan.kind));
  ASSERT_EQ(run.failures, 0) << where;
  ASSERT_TRUE(run.plans_agree) << where;
  EXPECT_EQ(run.host_syncs, 0u) << where;

  // Bytes: as predicted, and never more than plain.
  const uint64_t busiest = *std::max_element(run.off_node_bytes.begin(), run.off_node_bytes.end());
  EXPECT_EQ(busiest, run.plan.off_node_bytes) << where;
  EXPECT_LE(busiest, run.plan.plain_off_node_bytes) << where;

  const int n = topology.layout.world_size();
  if (spec.op == CollectiveOp::kAllGather) {
    for (int r = 1; r < n; ++r) {
      ASSERT_EQ(run.output[r], run.output[0]) << where << ": rank " << r << " differs from 0";
    }
    // The mode says lossy or not, and at which bits: never run.plan (a plan at the wrong bits
    // must not widen its own bound). Pass-throughs of a lossy mode are exact, so inside it.
    if (!mode.settings.qwz) {
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < spec.count; ++i) {
          ASSERT_EQ(ElementAt(run.output[0], spec.dtype, r * spec.count + i), run.input[r][i])
              << where << " rank " << r << " element " << i;
        }
      }
    } else {
      ExpectWithinBlockBound(run, spec, mode.settings.block, mode.settings.qwz_bits, where);
    }
    return;
  }
  double scale = 1.0;
  if (spec.reduction == plan::Reduction::kAvg) scale = 1.0 / n;
  if (spec.reduction == plan::Reduction::kPreMulSum) scale = spec.premul;
  const double error = RelativeL2(run, spec, scale);
  // From the mode and the shape, never from run.plan: a wrong plan must not widen its budget.
  EXPECT_LE(error, QgzBudget(mode.settings, shape, spec.dtype)) << where;
}

// A 4 MiB buffer; 256 KiB under the sanitizers, which check memory and threads, not sizes, and
// run the CPU codec some 20 times slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr size_t kLargeBufferBytes = size_t{256} << 10;
#else
constexpr size_t kLargeBufferBytes = size_t{4} << 20;
#endif

class EngineMatrixTest : public ::testing::TestWithParam<int> {};

TEST_P(EngineMatrixTest, EveryPlanDtypeSize) {
  const Topology topology = Topologies()[GetParam()];
  for (const MatrixMode& mode : MatrixModes()) {
    for (ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
      for (size_t count : {size_t{1}, size_t{37}, size_t{255}, size_t{257}, size_t{1000}}) {
        for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
          CollectiveSpec spec;
          spec.op = op;
          spec.count = count;
          spec.dtype = dtype;
          spec.seed = static_cast<uint32_t>(count * 3 + dtype);
          spec.in_place = count == 257;
          spec.reduction = count == 37 ? plan::Reduction::kAvg : plan::Reduction::kSum;
          if (count == 255) {
            spec.reduction = plan::Reduction::kPreMulSum;
            spec.premul = 0.25f;
            spec.premul_on_device = true;
          }
          if (count == 1000) {
            spec.reduction = plan::Reduction::kPreMulSum;
            spec.premul = 0.125f;
          }
          CheckRun(topology, mode, spec);
        }
      }
    }
  }
}

TEST_P(EngineMatrixTest, SeveralMebibytes) {
  const Topology topology = Topologies()[GetParam()];
  const int n = topology.layout.world_size();
  for (const MatrixMode& mode : MatrixModes()) {
    for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
      CollectiveSpec spec;
      spec.op = op;
      spec.dtype = ncclBfloat16;
      spec.count = kLargeBufferBytes / (2 * n) + 3;  // not a multiple of the block
      CheckRun(topology, mode, spec);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, EngineMatrixTest,
                         ::testing::Range(0, static_cast<int>(Topologies().size())),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return Topologies()[param.param].name;
                         });

// The byte counts, against formulas written here.
TEST(EngineBytesTest, QwzInt8AllGatherMovesAtMostHalfOfPlain) {
  const ClusterLayout layout = ClusterLayout::Uniform(2, 4);
  plan::Settings qwz;
  qwz.qwz = true;
  qwz.min_bytes = 0;
  CollectiveSpec spec;
  spec.dtype = ncclBfloat16;
  spec.count = 1 << 18;
  const CollectiveRun plain = RunCollective(layout, sim::ShapeOf(layout), plan::Settings{}, spec);
  const CollectiveRun quantized = RunCollective(layout, sim::ShapeOf(layout), qwz, spec);
  ASSERT_EQ(quantized.plan.kind, PlanKind::kQwzFlatAllGather);
  EXPECT_EQ(plain.off_node_bytes[0], uint64_t{1} * spec.count * 2);  // (nodes - 1) shards
  EXPECT_EQ(quantized.off_node_bytes[0], zppPieceBytes(spec.count, ncclBfloat16, 8, 256));
  EXPECT_LE(quantized.off_node_bytes[0], 0.52 * plain.off_node_bytes[0]);
}

TEST(EngineBytesTest, HierarchicalQgzCrossesNodesOnceAtInterBits) {
  const ClusterLayout layout = ClusterLayout::Uniform(4, 2);
  plan::Settings qgz;
  qgz.qgz = true;
  qgz.min_bytes = 0;
  CollectiveSpec spec;
  spec.op = CollectiveOp::kReduceScatter;
  spec.dtype = ncclFloat16;
  spec.count = 10000;
  const CollectiveRun run = RunCollective(layout, sim::ShapeOf(layout), qgz, spec);
  ASSERT_EQ(run.plan.kind, PlanKind::kQgzHierarchicalReduceScatter);
  for (uint64_t bytes : run.off_node_bytes) {
    EXPECT_EQ(bytes, 3 * zppPieceBytes(spec.count, ncclFloat16, 4, 256));  // one piece per node
  }
}

TEST(EngineBytesTest, ThreeLevelQgzSendsOneChunkPerRackAcrossRacks) {
  const ClusterLayout layout = ClusterLayout::Uniform(4, 2, 2);
  plan::Settings qgz;
  qgz.qgz = true;
  qgz.min_bytes = 0;
  CollectiveSpec spec;
  spec.op = CollectiveOp::kReduceScatter;
  spec.count = 5000;
  const CollectiveRun run = RunCollective(layout, sim::ShapeOf(layout), qgz, spec);
  ASSERT_EQ(run.plan.kind, PlanKind::kQgzThreeLevelReduceScatter);
  const uint64_t piece = zppPieceBytes(spec.count, ncclFloat32, 4, 256);
  for (size_t r = 0; r < run.inter_rack_bytes.size(); ++r) {
    EXPECT_EQ(run.inter_rack_bytes[r], 1 * piece);                          // one other rack
    EXPECT_EQ(run.off_node_bytes[r] - run.inter_rack_bytes[r], 2 * piece);  // 2 racks' sums
  }
}

}  // namespace
}  // namespace zpp::test
