// The planner's view of a Topology: the few numbers and verdicts plan::MakePlan reads.
#pragma once

#include "plan/plan.h"
#include "topology/topology.h"

namespace zpp::topology {

// config_agreed is left true: whether the ranks run one configuration is not the topology's to
// say; the caller that checks it sets it.
plan::Shape ShapeOf(const Topology& topology);

}  // namespace zpp::topology
