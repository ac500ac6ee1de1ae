// The nccl backend's byte columns. NCCL does not say what its transports moved, so a GPU row
// reports what the cost model predicts for the call's plan, which tests/bench holds equal to the
// sim's exact counts; plain NCCL's rows get the plan of NCCL's own ring, not zero.
#pragma once

#include "bench/zpp_bench/bench_types.h"
#include "plan/plan.h"

namespace zpp::bench {

// The planner's view of one call of `what` (count per rank).
plan::Call CallOf(const CollectiveCase& what);

// The pass-through plan plain NCCL's rows stand for, on nodes x gpus_per_node.
plan::Plan PlainPlan(const CollectiveCase& what, int nodes, int gpus_per_node);

// Bytes all ranks send over each link class in one call under `plan` (two levels: rack-level
// plans are not modelled, their inter-rack column stays 0).
void SetPredictedBytes(const plan::Plan& plan, const CollectiveCase& what, int nodes,
                       int gpus_per_node, Measurement* m);

}  // namespace zpp::bench
