// The records a made-up cluster would exchange: `ranks` ranks, `local_size` per host, hosts
// spread over `racks` racks in consecutive blocks. zpp-topo prints what the grouping makes of
// them; tests build layouts from them.
#pragma once

#include <string>
#include <vector>

#include "topology/rank_record.h"

namespace zpp::topology {

struct SimulatedCluster {
  int ranks = 1;
  int local_size = 1;
  int racks = 1;
};

// Empty when the shape is impossible, with `why` set (no ranks, local size < 1, fewer hosts
// than racks). A last host with fewer ranks, or racks with different numbers of hosts, are
// allowed: that is what the grouping is there to notice.
std::vector<RankRecord> SimulatedClusterRecords(const SimulatedCluster& cluster, std::string* why);

}  // namespace zpp::topology
