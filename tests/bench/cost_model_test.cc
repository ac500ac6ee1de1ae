// The cost model alone: its byte terms for hand-computed cases, the time model's shape, the
// step projection's plain volume, and calibration.
#include "costmodel/cost_model.h"

#include <gtest/gtest.h>

#include "costmodel/calibration.h"
#include "costmodel/step_projection.h"
#include "plan/planner.h"
#include "zpp/format.h"

namespace zpp::costmodel {
namespace {

plan::Call Gather(uint64_t count) {
  return {plan::CollectiveOp::kAllGather, count, ncclBfloat16, plan::Reduction::kNone};
}

TEST(CostModelTest, RingBytesByHand) {
  // 2 nodes x 4: each rank's 2 KiB shard enters the other node once and reaches 6 ranks inside.
  const RankBytes bytes = BytesOf(plan::Plan{}, Gather(1024), 2, 4);
  EXPECT_EQ(bytes.off_node, 2048u);        // (nodes - 1) x shard
  EXPECT_EQ(bytes.intra_node, 6 * 2048u);  // (ranks - nodes) x shard
}

TEST(CostModelTest, HierarchicalQuantizedBytesByHand) {
  plan::Plan plan;
  plan.kind = plan::PlanKind::kHierarchicalAllGather;
  plan.bits_inter = 8;
  plan.block = 256;
  const uint64_t piece = zppPieceBytes(1024, ncclBfloat16, 8, 256);  // 16 B scales + 1 KiB
  EXPECT_EQ(piece, 16u + 1024u);
  const RankBytes bytes = BytesOf(plan, Gather(1024), 3, 4);
  EXPECT_EQ(bytes.off_node, 2 * piece);
  EXPECT_EQ(bytes.intra_node, 3 * 3 * piece);
  plan.kind = plan::PlanKind::kHpzHitAllGather;
  EXPECT_EQ(BytesOf(plan, Gather(1024), 3, 4).off_node, 0u);
}

TEST(CostModelTest, SlowNetworkMakesQuantizedPlansFaster) {
  const ClusterModel model = DefaultModel(48, 8, 2400, 100);
  const plan::Shape shape = UniformShape(48, 8);
  plan::Settings zero_plus_plus;
  zero_plus_plus.qwz = zero_plus_plus.hpz = zero_plus_plus.qgz = true;
  const plan::Call big = Gather(uint64_t{1} << 22);
  const plan::Plan plain = plan::MakePlan(big, shape, plan::Settings{}, {});
  const plan::Plan quantized = plan::MakePlan(big, shape, zero_plus_plus, {});
  ASSERT_EQ(quantized.kind, plan::PlanKind::kHierarchicalAllGather);
  const double plain_us = TimeOf(plain, big, model).total_us();
  const double quantized_us = TimeOf(quantized, big, model).total_us();
  EXPECT_LT(quantized_us, 0.6 * plain_us);
  EXPECT_GT(TimeOf(quantized, big, model).codec_us, 0);
  EXPECT_EQ(TimeOf(plain, big, model).codec_us, 0);
  // Bandwidth term of the ring by hand: the node sends 8 x 47 x 8 MiB over 12.5 GB/s.
  const double expected_us = 8.0 * 47 * (8 << 20) / 12.5e9 * 1e6 + 383 * 5.0;
  EXPECT_NEAR(plain_us, expected_us, 1e-6 * expected_us);
}

TEST(CostModelTest, TinyMessagesAreLatencyBound) {
  const ClusterModel model = DefaultModel(4, 8, 2400, 100);
  const plan::Call tiny = Gather(1);
  const CallTime time = TimeOf(plan::Plan{}, tiny, model);
  EXPECT_NEAR(time.comm_us, 31 * 5.0, 0.01);
}

TEST(CostModelTest, StepProjectionOfPlainIsThreeGathers) {
  const std::vector<uint64_t> units = {1 << 20, 3 << 20, 1 << 22};
  const StepProjection plain =
      ProjectStep(units, ncclBfloat16, plan::Settings{}, DefaultModel(48, 8, 2400, 100));
  EXPECT_DOUBLE_EQ(plain.relative_volume, 3.0);
  plan::Settings s;
  s.qwz = s.hpz = s.qgz = true;
  s.min_bytes = 0;
  const StepProjection zero = ProjectStep(units, ncclBfloat16, s, DefaultModel(48, 8, 2400, 100));
  EXPECT_LT(zero.relative_volume, 0.8);
  EXPECT_LT(zero.total_us(), plain.total_us());
}

TEST(CalibrationTest, FieldsPresentReplaceTheModels) {
  ClusterModel model = DefaultModel(2, 4, 2400, 100);
  ASSERT_EQ(ApplyCalibrationText(R"({"inter": {"gbps": 200}, "kernels": {"quantize_gbps": 321.5}})",
                                 &model),
            ncclSuccess);
  EXPECT_EQ(model.inter.gbps, 200);
  EXPECT_EQ(model.inter.latency_us, 5);  // kept
  EXPECT_EQ(model.kernels.quantize_gbps, 321.5);
  EXPECT_EQ(model.intra.gbps, 2400);
  const ClusterModel before = model;
  EXPECT_NE(ApplyCalibrationText(R"({"inter": {"gbps": -1}})", &model), ncclSuccess);
  EXPECT_NE(ApplyCalibrationText(R"({"inter": {"gbps": "fast"}})", &model), ncclSuccess);
  EXPECT_NE(ApplyCalibrationText("not json", &model), ncclSuccess);
  EXPECT_EQ(model.inter.gbps, before.inter.gbps);  // unchanged by a failure
  EXPECT_NE(LoadCalibration("/nonexistent/calibration.json", &model), ncclSuccess);
}

}  // namespace
}  // namespace zpp::costmodel
