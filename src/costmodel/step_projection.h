// The cost model over a ZeRO-3 step: per FSDP unit, the forward all-gather, the backward
// all-gather (an hpZ hit when hpZ is on a hierarchy) and the gradient reduce-scatter, each
// with the plan zpp's planner picks for it.
#pragma once

#include <cstdint>
#include <vector>

#include "costmodel/cost_model.h"
#include "plan/plan.h"

namespace zpp::costmodel {

struct StepProjection {
  double comm_us = 0;
  double codec_us = 0;
  double off_node_bytes = 0;   // all ranks, per step
  double relative_volume = 0;  // in plain all-gathers of the model (ZeRO-3: 3.0)
  double total_us() const { return comm_us + codec_us; }
};

// `unit_elements`: parameters of each unit, whole model. `settings`: the techniques, block
// and min_bytes. The shard of a unit is its elements over the ranks, rounded up.
StepProjection ProjectStep(const std::vector<uint64_t>& unit_elements, ncclDataType_t dtype,
                           const plan::Settings& settings, const ClusterModel& model);

// The planner's view of nodes x gpus_per_node, contiguous, one rack.
plan::Shape UniformShape(int nodes, int gpus_per_node);

}  // namespace zpp::costmodel
