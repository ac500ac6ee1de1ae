// Where the ranks of a simulated cluster sit: the node of each rank and the rack of each node.
// Ranks of a node need not be contiguous, but every node must hold the same number of ranks and
// every rack the same number of nodes for the sub-groups to exist.
#pragma once

#include <array>
#include <vector>

#include "backend/backend.h"
#include "plan/plan.h"
#include "zpp/zpp.h"

namespace zpp::sim {

struct ClusterLayout {
  std::vector<int> node_of_rank;
  std::vector<int> rack_of_node;

  // nodes x ranks_per_node ranks, contiguous per node; racks nodes per rack, contiguous.
  static ClusterLayout Uniform(int nodes, int ranks_per_node, int racks = 1);

  int world_size() const { return static_cast<int>(node_of_rank.size()); }
  int node_count() const { return static_cast<int>(rack_of_node.size()); }
  zppLink_t LinkBetween(int rank_a, int rank_b) const;

  // The members (world ranks, in order) of `rank`'s group of `kind`.
  std::vector<int> GroupOf(int rank, GroupKind kind) const;
};

// The planner's view of a simulated cluster: the records its ranks would exchange (host
// "sim-node<n>", rack "rack<r>") through the same grouping the plugin uses, so uneven or
// interleaved layouts lose their hierarchy exactly as they would on a real cluster.
plan::Shape ShapeOf(const ClusterLayout& layout);

}  // namespace zpp::sim
