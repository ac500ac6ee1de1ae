#include "engine/idle_requests.h"

namespace zpp::engine {

namespace {

constexpr char kHierarchyNeeds[] =
    "it needs at least 2 nodes of at least 2 ranks each, every node with as many ranks, each "
    "node's ranks in one contiguous block (ZPP_LOCAL_SIZE or ZPP_NODE_ID set the nodes when "
    "zpp cannot tell them apart, e.g. containers with one hostname)";

}  // namespace

std::vector<std::string> IdleRequestWarnings(const plan::Settings& settings,
                                             const topology::Topology& topology) {
  std::vector<std::string> warnings;
  if (topology.num_ranks() <= 1) return warnings;  // every call passes through, said elsewhere
  const std::string where = std::to_string(topology.num_ranks()) + " ranks on " +
                            std::to_string(topology.num_nodes()) + " node(s)";
  const bool one_node = topology.num_nodes() == 1;
  if (settings.hpz && !topology.hierarchical_allowed()) {
    warnings.push_back("ZPP_HPZ=1 does nothing on this communicator (" + where + ": " +
                       topology.hierarchy_reason + "): hpZ keeps a secondary partition per node; " +
                       kHierarchyNeeds);
  }
  if (settings.qgz && !topology.hierarchical_allowed()) {
    warnings.push_back(
        "ZPP_QGZ=1 runs without its node levels on this communicator (" + where + ": " +
        topology.hierarchy_reason + ")" +
        (one_node ? ": nothing crosses a node boundary, so it saves no inter-node byte and only "
                    "adds quantization error (use it across nodes)"
                  : std::string("; its two-level reduce-scatter: ") + kHierarchyNeeds));
  }
  if (settings.qwz && one_node) {
    warnings.push_back("ZPP_QWZ=1 on one node (" + where +
                       "): nothing crosses a node boundary, so quantized weights save no "
                       "inter-node byte and only add error (use it across nodes)");
  }
  return warnings;
}

}  // namespace zpp::engine
