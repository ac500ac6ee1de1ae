#include "topology/plan_shape.h"

#include <algorithm>

namespace zpp::topology {

plan::Shape ShapeOf(const Topology& topology) {
  plan::Shape shape;
  shape.world = topology.num_ranks();
  shape.nodes = std::max(topology.num_nodes(), 1);
  shape.racks = std::max(topology.num_racks(), 1);
  // The smallest node and rack: the planner sizes its worst case from them when they differ.
  shape.min_local_size = topology.num_nodes() > 0 ? shape.world : 1;
  for (const NodeInfo& node : topology.nodes) {
    shape.min_local_size = std::min(shape.min_local_size, static_cast<int>(node.ranks.size()));
  }
  shape.nodes_per_rack = topology.num_racks() > 0 ? shape.nodes : 1;
  for (const RackInfo& rack : topology.racks) {
    shape.nodes_per_rack = std::min(shape.nodes_per_rack, static_cast<int>(rack.nodes.size()));
  }
  shape.hierarchical_allowed = topology.hierarchical_allowed();
  shape.rack_level_allowed = topology.rack_level_allowed;
  return shape;
}

}  // namespace zpp::topology
