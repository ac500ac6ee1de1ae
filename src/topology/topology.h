// The grouping of a communicator's ranks into nodes and racks, and whether hierarchical plans
// may use it. Every rank computes it from the same exchanged records, so every rank holds the
// same Topology and takes the same decisions from it. Plans read only this object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "topology/rank_record.h"

namespace zpp::topology {

// What decided which ranks share a node.
#define ZPP_GROUPING_BASES(X)                                                                \
  X(kHosts, "hosts") /* the host hash (NCCL_HOSTID, else host name, boot id) */              \
  X(kLocalSizeOverride, "ZPP_LOCAL_SIZE") /* blocks of that many consecutive global ranks */ \
  X(kNodeIdOverride, "ZPP_NODE_ID")       /* ZPP_NODE_ID of every rank */                    \
  X(kFallback, "fallback")                /* the records were unusable: a node per rank */
enum class GroupingBasis { ZPP_GROUPING_BASES(ZPP_ENUMERATOR) };
std::string_view GroupingBasisName(GroupingBasis basis);

// Whether hierarchical plans (hpZ, qgZ) may run, and if not, why. Flat plans (qwZ alone) do
// not depend on it.
#define ZPP_HIERARCHY_VERDICTS(X)                                                              \
  X(kAllowed, "allowed")                                                                       \
  X(kSingleRank, "single-rank")             /* nothing to do for one rank */                   \
  X(kSingleNode, "single-node")             /* every rank intra-node: one level */             \
  X(kOneRankPerNode, "one-rank-per-node")   /* an intra-node level of one rank: no gain */     \
  X(kUnevenNodes, "uneven-nodes")           /* nodes hold different numbers of ranks */        \
  X(kInterleaved, "interleaved")            /* a node's ranks not consecutive in rank order */ \
  X(kUntrustedRecords, "untrusted-records") /* the exchanged records could not be read */
enum class HierarchyVerdict { ZPP_HIERARCHY_VERDICTS(ZPP_ENUMERATOR) };
std::string_view HierarchyVerdictName(HierarchyVerdict verdict);

// Something the grouping found that a person should hear about.
struct Finding {
  enum class Kind {
    kInputProblem,  // bad or contradictory input: always a WARN
    kShape,         // a layout that rules out hierarchical plans: a WARN when they are asked for
    kNote,          // how the grouping came out: INFO
  };
  Kind kind;
  std::string text;
};

struct NodeInfo {
  std::string host;        // short host name of the node's lowest rank
  int rack = 0;            // index into Topology::racks
  std::vector<int> ranks;  // ascending
};

struct RackInfo {
  std::string name;        // the rack token; empty for the implicit single rack
  std::vector<int> nodes;  // ascending
};

struct Topology {
  GroupingBasis basis = GroupingBasis::kHosts;
  std::vector<RankRecord> records;  // as exchanged, by rank
  std::vector<int> node_of_rank;    // nodes are numbered by their lowest rank
  std::vector<int> local_rank;      // position of each rank inside its node
  std::vector<NodeInfo> nodes;
  std::vector<RackInfo> racks;  // numbered by their lowest node

  bool ranks_per_node_uniform = true;  // every node has the same number of ranks
  bool nodes_contiguous = true;        // every node's ranks are consecutive
  bool nodes_per_rack_uniform = true;  // every rack has the same number of nodes
  bool racks_contiguous = true;        // every rack's nodes are consecutive

  HierarchyVerdict hierarchy = HierarchyVerdict::kSingleRank;
  std::string hierarchy_reason;     // one line, for logs and zpp-topo
  bool rack_level_allowed = false;  // a third (inter-rack) level on top of the node hierarchy

  std::vector<Finding> findings;

  int num_ranks() const { return static_cast<int>(node_of_rank.size()); }
  int num_nodes() const { return static_cast<int>(nodes.size()); }
  int num_racks() const { return static_cast<int>(racks.size()); }
  int local_size(int rank) const;
  int rack_of_rank(int rank) const;
  bool hierarchical_allowed() const { return hierarchy == HierarchyVerdict::kAllowed; }
};

}  // namespace zpp::topology
