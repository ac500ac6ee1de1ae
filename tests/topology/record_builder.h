// Records for grouping tests: one line per rank, saying only what the test is about.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/hash.h"
#include "topology/host_identity.h"
#include "topology/rank_record.h"
#include "topology/str_cat.h"

namespace zpp::topology::test_support {

// A rank on `host`, in `rack` (empty: none) with ZPP_NODE_ID, ZPP_LOCAL_SIZE and the launcher's
// RANK as given.
inline RankRecord Record(const std::string& host, const std::string& rack = "", int node_id = -1,
                         int local_size = 0, int64_t launcher_rank = -1) {
  RankRecordInputs inputs;
  inputs.host.name = host;
  inputs.host.hash = Fnv1a64(host);
  inputs.rack = {rack, rack.empty() ? RackSource::kNone : RackSource::kEnv};
  inputs.node_id_override = node_id;
  inputs.local_size_override = local_size;
  inputs.launcher_rank = launcher_rank;
  return MakeRankRecord(inputs, LocalPicture{});
}

// `nodes` hosts "n0", "n1", ... with `per_node` consecutive ranks each; host h in rack
// "r<h / nodes_per_rack>" when nodes_per_rack > 0.
inline std::vector<RankRecord> Blocks(int nodes, int per_node, int nodes_per_rack = 0) {
  std::vector<RankRecord> records;
  for (int h = 0; h < nodes; ++h) {
    for (int i = 0; i < per_node; ++i) {
      const std::string rack = nodes_per_rack > 0 ? StrCat("r", h / nodes_per_rack) : "";
      records.push_back(Record(StrCat("n", h), rack));
    }
  }
  return records;
}

}  // namespace zpp::topology::test_support
