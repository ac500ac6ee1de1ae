#include "topology/topology.h"

namespace zpp::topology {

std::string_view GroupingBasisName(GroupingBasis basis) {
  static constexpr std::string_view kNames[] = {ZPP_GROUPING_BASES(ZPP_ENUM_NAME)};
  return NameIn(kNames, basis, "unknown");
}

std::string_view HierarchyVerdictName(HierarchyVerdict verdict) {
  static constexpr std::string_view kNames[] = {ZPP_HIERARCHY_VERDICTS(ZPP_ENUM_NAME)};
  return NameIn(kNames, verdict, "unknown");
}

int Topology::local_size(int rank) const {
  return static_cast<int>(
      nodes[static_cast<size_t>(node_of_rank[static_cast<size_t>(rank)])].ranks.size());
}

int Topology::rack_of_rank(int rank) const {
  return nodes[static_cast<size_t>(node_of_rank[static_cast<size_t>(rank)])].rack;
}

}  // namespace zpp::topology
