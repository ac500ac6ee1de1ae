// The sim's world all-gather and reduce-scatter on a cluster of several nodes, moved as the
// backend counts them (SimBackend::CountRing, "as NCCL's rings would"): every rank's piece
// crosses into every other node once, and spreads inside each node from there. A flat exchange
// over all ranks would send a piece to every rank of another node separately: on the shaped
// testbed (tools/netbed) plain's wire then carried twice the bytes zpp counted for it at two
// ranks per node, and every "bytes saved against plain" figure would have been measured against
// a plain that moves more than NCCL does.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "log/check.h"
#include "transport/transport.h"

namespace zpp::sim {

// Where the ranks of a uniform layout sit, as this rank's two sub-groups see them.
struct TwoLevelLayout {
  int nodes = 0;           // positions in the inter-node group (node order)
  int ranks_per_node = 0;  // positions in the intra-node group (local order)
  // rank_at[k * ranks_per_node + l]: the world rank at node position k, local position l.
  std::vector<int> rank_at;

  bool usable() const { return nodes > 1 && ranks_per_node > 1; }
};

// One world collective's two stages as this rank runs them: its inter-node and intra-node
// groups, with the sequence every member reserved for this call on each.
struct TwoLevelCall {
  const TwoLevelLayout* layout = nullptr;
  int rank = 0;
  transport::GroupView inter;
  uint64_t inter_sequence = 0;
  transport::GroupView intra;
  uint64_t intra_sequence = 0;
};

// recv holds the world's pieces in rank order; send may be this rank's piece of recv (in place).
Result TwoLevelAllGather(transport::Transport& transport, const TwoLevelCall& call,
                         const void* send, void* recv, size_t bytes);

// Chunk r of `send` (rank order) summed over the world into recv on rank r, times `scale`: first
// inside the node (each rank sums its node's chunks for its inter-node group's ranks, rounded
// to the dtype as a ring's partial sums are), then across nodes in node order, in fp32.
Result TwoLevelReduceScatter(transport::Transport& transport, const TwoLevelCall& call,
                             const void* send, void* recv, size_t count, ncclDataType_t dtype,
                             float scale);

}  // namespace zpp::sim
