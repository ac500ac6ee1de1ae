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
  // On one node the lossy techniques are off unless forced (plan::Settings::lossy_on_one_node).
  const std::string one_node_off =
      settings.lossy_on_one_node
          ? ": nothing crosses a node boundary, so it saves no inter-node byte and only adds "
            "error; it runs because ZPP_LOSSY_ONE_NODE=1"
          : ": nothing crosses a node boundary, so it would save no inter-node byte and only add "
            "error; its calls pass through (reason one-node; ZPP_LOSSY_ONE_NODE=1 runs it, for "
            "tests). It runs across nodes";
  if (settings.qgz && one_node) {
    warnings.push_back("ZPP_QGZ=1 is off on this communicator (" + where + ")" + one_node_off);
  } else if (settings.qgz && !topology.hierarchical_allowed()) {
    warnings.push_back("ZPP_QGZ=1 runs without its node levels on this communicator (" + where +
                       ": " + topology.hierarchy_reason +
                       "); its two-level reduce-scatter: " + kHierarchyNeeds);
  }
  if (settings.qwz && one_node) {
    warnings.push_back("ZPP_QWZ=1 is off on this communicator (" + where + ")" + one_node_off);
  }
  // One rank on each of several nodes runs the flat all-reduce (plan::PlanAllReduce).
  const bool one_per_node = !one_node && topology.num_ranks() == topology.num_nodes();
  if (settings.qar && !topology.hierarchical_allowed() && !one_per_node) {
    warnings.push_back("ZPP_QAR=1 is off on this communicator (" + where + ": " +
                       topology.hierarchy_reason + "): its all-reduces pass through (reason " +
                       (one_node ? "one-node" : "topology") + "); the compressed all-reduce " +
                       (one_node
                            ? std::string("saves only what crosses a node, and nothing does here")
                            : kHierarchyNeeds + std::string(", or one rank on each node")));
  }
  return warnings;
}

}  // namespace zpp::engine
