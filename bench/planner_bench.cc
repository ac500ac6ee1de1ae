// The planner's cost per intercepted call: it runs on every ncclAllGather / ncclReduceScatter,
// so it must stay far below NCCL's own launch cost (goal: under 1 microsecond).
#include <benchmark/benchmark.h>

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

void BM_PlanAllGather(benchmark::State& state) {
  const Shape shape = TwoLevel(48, 8);
  const Settings settings = ZeroPlusPlus();
  uint64_t count = 1 << 20;
  for (auto _ : state) {
    const Call call{CollectiveOp::kAllGather, count, ncclBfloat16, Reduction::kNone};
    benchmark::DoNotOptimize(MakePlan(call, shape, settings, HpzState{(count & 1) != 0}));
    count ^= 1;  // alternate hit and miss, defeat hoisting
  }
}
BENCHMARK(BM_PlanAllGather);

void BM_PlanReduceScatter(benchmark::State& state) {
  const Shape shape = TwoLevel(48, 8);
  const Settings settings = ZeroPlusPlus();
  uint64_t count = 1 << 20;
  for (auto _ : state) {
    const Call call{CollectiveOp::kReduceScatter, count, ncclBfloat16, Reduction::kAvg};
    benchmark::DoNotOptimize(MakePlan(call, shape, settings, HpzState{}));
    count ^= 1;
  }
}
BENCHMARK(BM_PlanReduceScatter);

void BM_PlanPassThrough(benchmark::State& state) {
  const Shape shape = TwoLevel(48, 8);
  const Settings settings = ZeroPlusPlus();
  uint64_t count = 1000;
  for (auto _ : state) {
    const Call call{CollectiveOp::kAllGather, count, ncclInt32, Reduction::kNone};
    benchmark::DoNotOptimize(MakePlan(call, shape, settings, HpzState{}));
    count ^= 1;
  }
}
BENCHMARK(BM_PlanPassThrough);

}  // namespace
}  // namespace zpp::plan

BENCHMARK_MAIN();
