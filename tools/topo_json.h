// zpp-topo's machine-readable output (--json). Both views share the top-level "nodes" and
// "racks" lists: each node with its host, rack and ranks, each rack with its name and nodes.
#pragma once

#include <nlohmann/json.hpp>

#include "topology/host_identity.h"
#include "topology/local_picture.h"
#include "topology/rack_resolution.h"
#include "topology/topology.h"

namespace zpp::tools {

nlohmann::ordered_json TopologyJson(const topology::Topology& topology);

// The grouping of this one process (one node, one rack) plus "machine": the hwloc picture.
nlohmann::ordered_json MachineJson(const topology::LocalPicture& picture,
                                   const topology::HostIdentity& host,
                                   const topology::RackChoice& rack,
                                   const topology::Topology& topology);

}  // namespace zpp::tools
