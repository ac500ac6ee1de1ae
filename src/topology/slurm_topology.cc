#include "topology/slurm_topology.h"

#include <vector>

#include "common/text.h"
#include "config/rack_token.h"
#include "topology/printable.h"
#include "topology/str_cat.h"

namespace zpp::topology {

SlurmRack RackFromSlurmTopologyAddr(std::string_view addr,
                                    std::optional<std::string_view> pattern) {
  SlurmRack result;
  const std::vector<std::string_view> parts = text::Split(text::Trim(addr), '.');
  for (std::string_view part : parts) {
    if (part.empty()) {
      result.problem = "has an empty component";
      return result;
    }
  }

  // The node is the last component unless the pattern puts it elsewhere.
  size_t node_index = parts.size() - 1;
  if (pattern) {
    const std::vector<std::string_view> kinds = text::Split(text::Trim(*pattern), '.');
    if (kinds.size() != parts.size()) {
      result.problem = StrCat("has ", parts.size(),
                              " components but SLURM_TOPOLOGY_ADDR_PATTERN has ", kinds.size());
      return result;
    }
    size_t found = kinds.size();
    for (size_t i = 0; i < kinds.size(); ++i) {
      if (kinds[i] == "node") found = i;
    }
    if (found == kinds.size()) {
      result.problem = "has no 'node' in SLURM_TOPOLOGY_ADDR_PATTERN";
      return result;
    }
    node_index = found;
  }
  if (node_index == 0) return result;  // no switch above the node: SLURM knows no racks

  const std::string_view leaf_switch = parts[node_index - 1];
  if (const std::string_view problem = config::RackTokenProblem(leaf_switch); !problem.empty()) {
    result.problem = StrCat("names switch '", Printable(leaf_switch), "', which ", problem);
    return result;
  }
  result.rack = std::string(leaf_switch);
  return result;
}

}  // namespace zpp::topology
