#include "topology/simulated_cluster.h"

#include "common/hash.h"
#include "topology/str_cat.h"

namespace zpp::topology {

std::vector<RankRecord> SimulatedClusterRecords(const SimulatedCluster& cluster, std::string* why) {
  if (cluster.ranks < 1 || cluster.local_size < 1 || cluster.racks < 1) {
    *why = "ranks, local size and racks must all be at least 1";
    return {};
  }
  const int hosts = (cluster.ranks + cluster.local_size - 1) / cluster.local_size;
  if (cluster.racks > hosts) {
    *why = StrCat(cluster.racks, " racks need at least as many hosts, and ", cluster.ranks,
                  " ranks at ", cluster.local_size, " per host make ", hosts);
    return {};
  }
  std::vector<RankRecord> records;
  records.reserve(static_cast<size_t>(cluster.ranks));
  for (int r = 0; r < cluster.ranks; ++r) {
    const int host = r / cluster.local_size;
    // Consecutive hosts share a rack, and racks differ in size by at most one host.
    const int rack = static_cast<int>(static_cast<int64_t>(host) * cluster.racks / hosts);
    RankRecordInputs inputs;
    inputs.host.name = StrCat("sim-node", host);
    inputs.host.hash = Fnv1a64(inputs.host.name);
    inputs.rack = {StrCat("rack", rack), RackSource::kEnv};
    inputs.local_device = r % cluster.local_size;
    records.push_back(MakeRankRecord(inputs, LocalPicture{}));
  }
  return records;
}

}  // namespace zpp::topology
