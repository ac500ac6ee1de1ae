// The cost model's byte terms against the sim's exact byte counts, for every plan the planner
// picks on small two-level clusters: the model must count what the engine sends.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/zpp_bench/sim_runner.h"
#include "costmodel/cost_model.h"
#include "costmodel/step_projection.h"
#include "plan/planner.h"
#include "step/mode.h"

namespace zpp::bench {
namespace {

constexpr plan::CollectiveOp kGather = plan::CollectiveOp::kAllGather;
constexpr plan::CollectiveOp kScatter = plan::CollectiveOp::kReduceScatter;
constexpr plan::CollectiveOp kReduce = plan::CollectiveOp::kAllReduce;

TEST(CostModelSimTest, ByteTermsEqualTheSimsCounts) {
  const struct { int nodes, gpus; } clusters[] = {{2, 2}, {2, 4}, {3, 2}, {4, 2}, {1, 4}, {4, 1}};
  int checked = 0;
  for (const auto& c : clusters) {
    SimRunner runner(sim::ClusterLayout::Uniform(c.nodes, c.gpus));
    const plan::Shape shape = costmodel::UniformShape(c.nodes, c.gpus);
    // The ZeRO-3 collectives' modes on both of theirs, the all-reduce's on it.
    const struct {
      const char* mode;
      std::vector<plan::CollectiveOp> ops;
    } cases[] = {{"plain", {kGather, kScatter, kReduce}},
                 {"qwz8", {kGather, kScatter}},
                 {"qwz4", {kGather, kScatter}},
                 {"hpz", {kGather, kScatter}},
                 {"qwz8+hpz", {kGather, kScatter}},
                 {"qwz4+hpz", {kGather, kScatter}},
                 {"qgz8/4", {kGather, kScatter}},
                 {"qgz8/8", {kGather, kScatter}},
                 {"qgz4/4", {kGather, kScatter}},
                 {"qar8", {kReduce}},
                 {"qar4", {kReduce}},
                 {"qar4+ef", {kReduce}}};
    for (const auto& [mode, ops] : cases) {
      for (plan::CollectiveOp op : ops) {
        for (uint64_t count : {uint64_t{1000}, uint64_t{4096}}) {
          CollectiveCase what;
          what.op = op;
          what.settings.min_bytes = 0;
          ASSERT_EQ(step::ParseMode(mode, &what.settings), ncclSuccess);
          what.mode = mode;
          what.dtype = ncclBfloat16;
          what.count = count;
          what.warmup = 0;
          what.iterations = 1;
          Measurement measured;
          ASSERT_EQ(runner.Run(what, &measured), ncclSuccess);
          const plan::Call call{op, count, ncclBfloat16,
                                op == plan::CollectiveOp::kAllGather ? plan::Reduction::kNone
                                                                     : plan::Reduction::kSum};
          const plan::Plan plan = plan::MakePlan(call, shape, what.settings, {});
          const std::string where = std::to_string(c.nodes) + "x" + std::to_string(c.gpus) + " " +
                                    mode + " " + OpName(op) + " " + std::to_string(count) +
                                    " plan " + measured.plan;
          ASSERT_EQ(measured.plan, plan::PlanKindName(plan.kind)) << where;
          const costmodel::RankBytes modelled = costmodel::BytesOf(plan, call, c.nodes, c.gpus);
          const uint64_t ranks = static_cast<uint64_t>(c.nodes * c.gpus);
          EXPECT_EQ(measured.bytes_inter_node, modelled.off_node * ranks) << where;
          EXPECT_EQ(measured.bytes_intra_node, modelled.intra_node * ranks) << where;
          EXPECT_EQ(measured.bytes_inter_rack, 0u) << where;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 6 * (9 * 2 + 1 + 3) * 2);
}

}  // namespace
}  // namespace zpp::bench
