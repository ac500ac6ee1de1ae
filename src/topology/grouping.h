// From every rank's record to the Topology: nodes, racks, uniformity, and the verdict on
// hierarchical plans. Pure and deterministic, so that every rank, given the same records,
// reaches the same Topology without talking to the others again.
#pragma once

#include <span>
#include <string>

#include "topology/rank_record.h"
#include "topology/topology.h"

namespace zpp::topology {

// Nodes come from ZPP_NODE_ID when every rank set it, else from ZPP_LOCAL_SIZE when every rank
// set the same value, else from the host hashes; overrides set on only some ranks, or set
// differently, are ignored with a WARN. Racks come from the ranks' rack ids; any contradiction
// (ranks of one node in different racks, some ranks with a rack and some without, an invalid
// token) makes the whole communicator one rack, with a WARN.
Topology BuildTopology(std::span<const RankRecord> records);

// When the records could not be exchanged or read: every rank on its own node, one rack,
// hierarchical plans off (flat plans do not need the grouping). `reason` says why.
Topology FallbackTopology(int num_ranks, const std::string& reason);

}  // namespace zpp::topology
