#include "topology/topology.h"

namespace zpp::topology {

std::string_view GroupingBasisName(GroupingBasis basis) {
  switch (basis) {
    case GroupingBasis::kHosts:
      return "hosts";
    case GroupingBasis::kLocalSizeOverride:
      return "ZPP_LOCAL_SIZE";
    case GroupingBasis::kNodeIdOverride:
      return "ZPP_NODE_ID";
    case GroupingBasis::kFallback:
      return "fallback";
  }
  return "unknown";
}

std::string_view HierarchyVerdictName(HierarchyVerdict verdict) {
  switch (verdict) {
    case HierarchyVerdict::kAllowed:
      return "allowed";
    case HierarchyVerdict::kSingleRank:
      return "single-rank";
    case HierarchyVerdict::kSingleNode:
      return "single-node";
    case HierarchyVerdict::kOneRankPerNode:
      return "one-rank-per-node";
    case HierarchyVerdict::kUnevenNodes:
      return "uneven-nodes";
    case HierarchyVerdict::kInterleaved:
      return "interleaved";
    case HierarchyVerdict::kUntrustedRecords:
      return "untrusted-records";
  }
  return "unknown";
}

int Topology::local_size(int rank) const {
  return static_cast<int>(
      nodes[static_cast<size_t>(node_of_rank[static_cast<size_t>(rank)])].ranks.size());
}

int Topology::rack_of_rank(int rank) const {
  return nodes[static_cast<size_t>(node_of_rank[static_cast<size_t>(rank)])].rack;
}

}  // namespace zpp::topology
