// The planner's cost per intercepted call: it runs on every ncclAllGather / ncclReduceScatter,
// so it must stay far below NCCL's own launch cost (goal: under 1 microsecond, checked: a plan
// slower than that fails the run).
#include <benchmark/benchmark.h>

#include "checked_reporter.h"
#include "plan/planner.h"

namespace zpp::plan {
namespace {

Shape TwoLevel(int nodes, int locals) {
  Shape shape;
  shape.world = nodes * locals;
  shape.nodes = nodes;
  shape.min_local_size = locals;
  shape.nodes_per_rack = nodes;
  shape.hierarchical_allowed = true;
  return shape;
}

Settings ZeroPlusPlus() {
  Settings s;
  s.qwz = s.hpz = s.qgz = true;
  return s;
}

// Plans `call` over and over, its count flipping between two values (and hpZ between hit and
// miss) so that nothing is hoisted out of the loop.
void PlanRepeatedly(benchmark::State& state, Call call) {
  const Shape shape = TwoLevel(48, 8);
  const Settings settings = ZeroPlusPlus();
  for (auto _ : state) {
    benchmark::DoNotOptimize(MakePlan(call, shape, settings, HpzState{(call.count & 1) != 0}));
    call.count ^= 1;
  }
}

void BM_PlanAllGather(benchmark::State& state) {
  PlanRepeatedly(state, {CollectiveOp::kAllGather, 1 << 20, ncclBfloat16, Reduction::kNone});
}
BENCHMARK(BM_PlanAllGather);

void BM_PlanReduceScatter(benchmark::State& state) {
  PlanRepeatedly(state, {CollectiveOp::kReduceScatter, 1 << 20, ncclBfloat16, Reduction::kAvg});
}
BENCHMARK(BM_PlanReduceScatter);

void BM_PlanPassThrough(benchmark::State& state) {
  PlanRepeatedly(state, {CollectiveOp::kAllGather, 1000, ncclInt32, Reduction::kNone});
}
BENCHMARK(BM_PlanPassThrough);

}  // namespace
}  // namespace zpp::plan

int main(int argc, char** argv) { return zpp::bench::Main(argc, argv, /*goal_ns=*/1000.0); }
