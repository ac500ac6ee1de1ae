// The rack of a node from SLURM's topology/tree plugin: SLURM_TOPOLOGY_ADDR is the path of
// switches down to the node ("core.leaf3.node07", with SLURM_TOPOLOGY_ADDR_PATTERN
// "switch.switch.node"); the rack is the switch right above the node, the leaf switch.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace zpp::topology {

struct SlurmRack {
  std::optional<std::string> rack;  // the leaf switch, when the address names one
  std::string problem;              // why there is none, when the address is malformed
};

// `pattern` is SLURM_TOPOLOGY_ADDR_PATTERN when set: it says which component is the node. An
// address with no switch above the node (the flat topology plugin) gives no rack and no problem.
SlurmRack RackFromSlurmTopologyAddr(std::string_view addr, std::optional<std::string_view> pattern);

}  // namespace zpp::topology
