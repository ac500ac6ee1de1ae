// zpp-topo's human-readable output: aligned tables of a machine's picture and of a grouping.
#pragma once

#include <string>
#include <vector>

#include "topology/host_identity.h"
#include "topology/local_picture.h"
#include "topology/rack_resolution.h"
#include "topology/topology.h"

namespace zpp::tools {

// "0-3,8-11": ascending integers with runs collapsed.
std::string RangeList(const std::vector<int>& values);

std::string PictureTable(const topology::LocalPicture& picture, const topology::HostIdentity& host,
                         const topology::RackChoice& rack);

std::string TopologyTable(const topology::Topology& topology);

}  // namespace zpp::tools
