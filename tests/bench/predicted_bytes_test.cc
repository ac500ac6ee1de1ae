// The GPU rows' byte columns (bench/zpp_bench/predicted_bytes.h) against the sim's exact counts:
// plain NCCL's rows once reported zero bytes and the intra-node column was never filled.
#include "bench/zpp_bench/predicted_bytes.h"

#include <gtest/gtest.h>

#include <string>

#include "bench/zpp_bench/sim_runner.h"
#include "costmodel/step_projection.h"
#include "plan/planner.h"
#include "step/mode.h"

namespace zpp::bench {
namespace {

// One call of 4096 bf16 elements per rank under `mode`, the planner's size floor off.
CollectiveCase CaseOf(plan::CollectiveOp op, const char* mode) {
  CollectiveCase what;
  what.op = op;
  what.mode = mode;
  what.settings.min_bytes = 0;
  EXPECT_EQ(step::ParseMode(mode, &what.settings), ncclSuccess);
  what.dtype = ncclBfloat16;
  what.count = 4096;
  what.warmup = 0;
  what.iterations = 1;
  return what;
}

TEST(PredictedBytesTest, PlainRowsPredictWhatTheSimCountsForNcclsRing) {
  const struct { int nodes, gpus; } clusters[] = {{2, 2}, {2, 4}, {3, 2}, {1, 4}};
  for (const auto& c : clusters) {
    SimRunner runner(sim::ClusterLayout::Uniform(c.nodes, c.gpus));
    for (plan::CollectiveOp op :
         {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter,
          plan::CollectiveOp::kAllReduce}) {
      const CollectiveCase what = CaseOf(op, "plain");
      Measurement counted, predicted;
      ASSERT_EQ(runner.Run(what, &counted), ncclSuccess);
      SetPredictedBytes(PlainPlan(what, c.nodes, c.gpus), what, c.nodes, c.gpus, &predicted);
      const std::string where =
          std::to_string(c.nodes) + "x" + std::to_string(c.gpus) + " " + OpName(op);
      EXPECT_EQ(predicted.bytes_inter_node, counted.bytes_inter_node) << where;
      EXPECT_EQ(predicted.bytes_intra_node, counted.bytes_intra_node) << where;
      EXPECT_EQ(predicted.bytes_inter_node > 0, c.nodes > 1) << where;
      EXPECT_EQ(predicted.bytes_intra_node > 0, c.gpus > 1) << where;
    }
  }
}

TEST(PredictedBytesTest, ZeroPlusPlusRowsCountBothLevels) {
  SimRunner runner(sim::ClusterLayout::Uniform(2, 4));
  for (plan::CollectiveOp op :
       {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter}) {
    const CollectiveCase what = CaseOf(op, "zero++");
    Measurement counted, predicted;
    ASSERT_EQ(runner.Run(what, &counted), ncclSuccess);
    const plan::Plan plan = plan::MakePlan(CallOf(what), costmodel::UniformShape(2, 4),
                                           what.settings, plan::HpzState{});
    ASSERT_EQ(counted.plan, plan::PlanKindName(plan.kind));
    SetPredictedBytes(plan, what, 2, 4, &predicted);
    EXPECT_EQ(predicted.bytes_inter_node, counted.bytes_inter_node) << OpName(op);
    EXPECT_EQ(predicted.bytes_intra_node, counted.bytes_intra_node) << OpName(op);
    EXPECT_GT(predicted.bytes_intra_node, 0u) << OpName(op);
  }
}

}  // namespace
}  // namespace zpp::bench
