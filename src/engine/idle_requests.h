// Techniques the user asked for that cannot do what they are for on a communicator's topology
// (issue 29): hpZ with no hierarchy keeps nothing, and on one node nothing crosses a node
// boundary, so quantizing saves no inter-node byte and only adds error. Said once per
// communicator, by its rank 0, as a WARN naming the technique, the reason and what would make it
// run; at INFO only, a user concluded the job was compressed when it was not.
#pragma once

#include <string>
#include <vector>

#include "plan/plan.h"
#include "topology/topology.h"

namespace zpp::engine {

// One line per technique on in `settings` that the topology leaves idle or pointless.
std::vector<std::string> IdleRequestWarnings(const plan::Settings& settings,
                                             const topology::Topology& topology);

}  // namespace zpp::engine
