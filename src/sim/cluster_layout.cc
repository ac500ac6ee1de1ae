#include "sim/cluster_layout.h"

#include <algorithm>
#include <string>

#include "common/hash.h"
#include "topology/grouping.h"
#include "topology/plan_shape.h"
#include "topology/rank_record.h"

namespace zpp::sim {

ClusterLayout ClusterLayout::Uniform(int nodes, int ranks_per_node, int racks) {
  ClusterLayout layout;
  for (int node = 0; node < nodes; ++node) {
    for (int local = 0; local < ranks_per_node; ++local) layout.node_of_rank.push_back(node);
    layout.rack_of_node.push_back(node * racks / nodes);
  }
  return layout;
}

zppLink_t ClusterLayout::LinkBetween(int rank_a, int rank_b) const {
  const int node_a = node_of_rank[rank_a];
  const int node_b = node_of_rank[rank_b];
  if (node_a == node_b) return zppLinkIntraNode;
  return rack_of_node[node_a] == rack_of_node[node_b] ? zppLinkInterNode : zppLinkInterRack;
}

namespace {

// The rank's position among the ranks of its node, in rank order.
int LocalRank(const ClusterLayout& layout, int rank) {
  int local = 0;
  for (int r = 0; r < rank; ++r) local += layout.node_of_rank[r] == layout.node_of_rank[rank];
  return local;
}

// The node's position among the nodes of its rack, in node order.
int NodeInRack(const ClusterLayout& layout, int node) {
  int position = 0;
  for (int n = 0; n < node; ++n) position += layout.rack_of_node[n] == layout.rack_of_node[node];
  return position;
}

}  // namespace

std::vector<int> ClusterLayout::GroupOf(int rank, GroupKind kind) const {
  const int node = node_of_rank[rank];
  const int local = LocalRank(*this, rank);
  const int rack = rack_of_node[node];
  std::vector<int> members;
  for (int r = 0; r < world_size(); ++r) {
    const int other_node = node_of_rank[r];
    bool member = false;
    switch (kind) {
      case GroupKind::kWorld:
        member = true;
        break;
      case GroupKind::kIntraNode:
        member = other_node == node;
        break;
      case GroupKind::kInterNode:
        member = LocalRank(*this, r) == local;
        break;
      case GroupKind::kIntraRack:
        member = LocalRank(*this, r) == local && rack_of_node[other_node] == rack;
        break;
      case GroupKind::kInterRack:
        member = LocalRank(*this, r) == local &&
                 NodeInRack(*this, other_node) == NodeInRack(*this, node);
        break;
    }
    if (member) members.push_back(r);
  }
  // Inter-node groups are ordered by node, so a gathered piece i comes from node order i.
  if (kind == GroupKind::kInterNode || kind == GroupKind::kIntraRack ||
      kind == GroupKind::kInterRack) {
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return node_of_rank[a] < node_of_rank[b]; });
  }
  return members;
}

plan::Shape ShapeOf(const ClusterLayout& layout) {
  std::vector<topology::RankRecord> records;
  records.reserve(layout.node_of_rank.size());
  for (int node : layout.node_of_rank) {
    topology::RankRecordInputs inputs;
    inputs.host.name = "sim-node" + std::to_string(node);
    inputs.host.hash = Fnv1a64(inputs.host.name);
    inputs.rack = {"rack" + std::to_string(layout.rack_of_node[node]), topology::RackSource::kEnv};
    records.push_back(topology::MakeRankRecord(inputs, topology::LocalPicture{}));
  }
  return topology::ShapeOf(topology::BuildTopology(records));
}

}  // namespace zpp::sim
