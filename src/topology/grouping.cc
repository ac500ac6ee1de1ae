#include "topology/grouping.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "config/rack_token.h"
#include "topology/printable.h"
#include "topology/str_cat.h"

namespace zpp::topology {
namespace {

constexpr const char* kHierarchyOff =
    "hierarchical plans disabled for this communicator, flat quantized plans still allowed";

std::string HostOf(const RankRecord& record) { return Printable(FieldText(record.host_name)); }

std::string RankAt(std::span<const RankRecord> records, size_t rank) {
  return StrCat("rank ", rank, " (host ", HostOf(records[rank]), ")");
}

std::string NodeLabel(const Topology& topology, int node) {
  return StrCat("node ", node, " (host ", topology.nodes[static_cast<size_t>(node)].host, ")");
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < 8; ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > 8) out += ",...";
  return out;
}

void Add(Topology* topology, Finding::Kind kind, std::string text) {
  topology->findings.push_back({kind, std::move(text)});
}

bool LauncherRanksDistinct(std::span<const RankRecord> records) {
  std::vector<int64_t> ranks;
  ranks.reserve(records.size());
  for (const RankRecord& record : records) {
    if (record.launcher_rank < 0) return false;
    ranks.push_back(record.launcher_rank);
  }
  std::sort(ranks.begin(), ranks.end());
  return std::adjacent_find(ranks.begin(), ranks.end()) == ranks.end();
}

// The node key of every rank, and what it came from.
std::pair<GroupingBasis, std::vector<int64_t>> NodeKeys(std::span<const RankRecord> records,
                                                        Topology* topology) {
  const size_t n = records.size();
  std::vector<int64_t> keys(n);

  size_t with_node_id = 0;
  size_t without_node_id = 0;  // a rank that did not set it, for the message
  for (size_t r = 0; r < n; ++r) {
    if (records[r].node_id_override >= 0) {
      ++with_node_id;
    } else {
      without_node_id = r;
    }
  }
  if (with_node_id == n) {
    for (size_t r = 0; r < n; ++r) keys[r] = records[r].node_id_override;
    return {GroupingBasis::kNodeIdOverride, keys};
  }
  if (with_node_id > 0) {
    Add(topology, Finding::Kind::kInputProblem,
        StrCat(
            "ZPP_NODE_ID is set on ", with_node_id, " of ", n, " ranks (not on ",
            RankAt(records, without_node_id),
            "); zpp ignores ZPP_NODE_ID for this communicator (set it on every rank or on none)"));
  }

  const int32_t local_size = records[0].local_size_override;
  size_t disagreeing = 0;
  for (size_t r = 1; r < n && disagreeing == 0; ++r) {
    if (records[r].local_size_override != local_size) disagreeing = r;
  }
  auto show = [](int32_t v) { return v > 0 ? std::to_string(v) : std::string("unset"); };
  if (disagreeing != 0) {
    Add(topology, Finding::Kind::kInputProblem,
        StrCat("ranks disagree on ZPP_LOCAL_SIZE (rank 0: ", show(local_size), ", ",
               RankAt(records, disagreeing), ": ", show(records[disagreeing].local_size_override),
               "); zpp ignores ZPP_LOCAL_SIZE for this communicator (set the same value on every "
               "rank)"));
  } else if (local_size > 0) {
    // Blocks of the launcher's global ranks when every rank has a distinct one: a sub-communicator
    // (HSDP's mesh groups, DeepSpeed's) then sits on the simulated nodes of its processes. Blocks
    // of communicator ranks otherwise (ranks that are threads of one process share one RANK).
    const bool by_launcher = LauncherRanksDistinct(records);
    if (!by_launcher && std::any_of(records.begin(), records.end(),
                                    [](const RankRecord& r) { return r.launcher_rank >= 0; })) {
      Add(topology, Finding::Kind::kNote,
          "ZPP_LOCAL_SIZE: RANK is missing or repeated among this communicator's ranks; zpp "
          "numbers its simulated nodes by communicator rank");
    }
    for (size_t r = 0; r < n; ++r) {
      keys[r] = (by_launcher ? records[r].launcher_rank : static_cast<int64_t>(r)) / local_size;
    }
    return {GroupingBasis::kLocalSizeOverride, keys};
  }

  for (size_t r = 0; r < n; ++r) {
    // The hash as a key: its bits, reinterpreted, compare the same way on every rank.
    keys[r] = static_cast<int64_t>(records[r].host_hash);
  }
  return {GroupingBasis::kHosts, keys};
}

void GroupNodes(std::span<const RankRecord> records, Topology* topology) {
  auto [basis, keys] = NodeKeys(records, topology);
  topology->basis = basis;
  std::map<int64_t, int> node_of_key;
  topology->node_of_rank.resize(records.size());
  topology->local_rank.resize(records.size());
  for (size_t r = 0; r < records.size(); ++r) {
    auto [it, inserted] = node_of_key.try_emplace(keys[r], topology->num_nodes());
    if (inserted) topology->nodes.push_back({HostOf(records[r]), 0, {}});
    NodeInfo& node = topology->nodes[static_cast<size_t>(it->second)];
    topology->node_of_rank[r] = it->second;
    topology->local_rank[r] = static_cast<int>(node.ranks.size());
    node.ranks.push_back(static_cast<int>(r));
  }
  for (const NodeInfo& node : topology->nodes) {
    if (node.ranks.size() != topology->nodes[0].ranks.size()) {
      topology->ranks_per_node_uniform = false;
    }
    // Ranks are ascending, so a node is contiguous when its span is its size.
    if (node.ranks.back() - node.ranks.front() + 1 != static_cast<int>(node.ranks.size())) {
      topology->nodes_contiguous = false;
    }
  }
}

// Why the racks the ranks claim cannot be used, or nullopt when they can.
std::optional<std::string> RackProblem(std::span<const RankRecord> records,
                                       const Topology& topology) {
  std::optional<size_t> with_rack;
  std::optional<size_t> without_rack;
  for (size_t r = 0; r < records.size(); ++r) {
    const std::string_view rack = FieldText(records[r].rack);
    if (rack.empty()) {
      if (!without_rack) without_rack = r;
      continue;
    }
    if (!with_rack) with_rack = r;
    if (const std::string_view problem = config::RackTokenProblem(rack); !problem.empty()) {
      return StrCat(RankAt(records, r), " sent rack id '", Printable(rack), "', which ", problem);
    }
  }
  if (with_rack && without_rack) {
    const RankRecord& has = records[*with_rack];
    return StrCat(RankAt(records, *without_rack), " has no rack id but ",
                  RankAt(records, *with_rack), " is in rack '", FieldText(has.rack), "' (from ",
                  RackSourceName(static_cast<RackSource>(has.rack_source)), ")");
  }
  for (int node = 0; node < topology.num_nodes(); ++node) {
    const std::vector<int>& ranks = topology.nodes[static_cast<size_t>(node)].ranks;
    const RankRecord& first = records[static_cast<size_t>(ranks[0])];
    for (int r : ranks) {
      const RankRecord& other = records[static_cast<size_t>(r)];
      if (FieldText(other.rack) != FieldText(first.rack)) {
        return StrCat("ranks ", ranks[0], " and ", r, " share ", NodeLabel(topology, node),
                      " but claim racks '", FieldText(first.rack), "' and '", FieldText(other.rack),
                      "'");
      }
    }
  }
  return std::nullopt;
}

void GroupRacks(std::span<const RankRecord> records, Topology* topology) {
  const std::optional<std::string> problem = RackProblem(records, *topology);
  const bool has_racks = !FieldText(records[0].rack).empty();
  if (problem || !has_racks) {
    if (problem) {
      Add(topology, Finding::Kind::kInputProblem,
          StrCat(*problem,
                 "; zpp treats the communicator as one rack (give every rank of a node the same "
                 "rack through ZPP_RACK_ID, ZPP_TOPO_FILE or SLURM_TOPOLOGY_ADDR, on all ranks "
                 "or none)"));
    }
    topology->racks.push_back({"", {}});
    for (int node = 0; node < topology->num_nodes(); ++node) {
      topology->racks[0].nodes.push_back(node);
    }
    return;
  }
  std::map<std::string, int, std::less<>> rack_of_name;
  for (int node = 0; node < topology->num_nodes(); ++node) {
    NodeInfo& info = topology->nodes[static_cast<size_t>(node)];
    const std::string_view name = FieldText(records[static_cast<size_t>(info.ranks[0])].rack);
    auto [it, inserted] = rack_of_name.try_emplace(std::string(name), topology->num_racks());
    if (inserted) topology->racks.push_back({std::string(name), {}});
    info.rack = it->second;
    topology->racks[static_cast<size_t>(it->second)].nodes.push_back(node);
  }
  for (const RackInfo& rack : topology->racks) {
    if (rack.nodes.size() != topology->racks[0].nodes.size()) {
      topology->nodes_per_rack_uniform = false;
    }
    if (rack.nodes.back() - rack.nodes.front() + 1 != static_cast<int>(rack.nodes.size())) {
      topology->racks_contiguous = false;
    }
  }
}

std::string UnevenNodesText(const Topology& topology) {
  // One example node per distinct size is enough to see the problem.
  std::map<size_t, int> example_of_size;
  for (int node = 0; node < topology.num_nodes(); ++node) {
    example_of_size.try_emplace(topology.nodes[static_cast<size_t>(node)].ranks.size(), node);
  }
  std::string sizes;
  for (const auto& [size, node] : example_of_size) {
    if (!sizes.empty()) sizes += ", ";
    sizes += StrCat(size, " on ", NodeLabel(topology, node));
  }
  return StrCat("ranks per node are uneven (", sizes, ")");
}

std::string InterleavedText(const Topology& topology) {
  for (int node = 0; node < topology.num_nodes(); ++node) {
    const std::vector<int>& ranks = topology.nodes[static_cast<size_t>(node)].ranks;
    if (ranks.back() - ranks.front() + 1 != static_cast<int>(ranks.size())) {
      return StrCat("the ranks of ", NodeLabel(topology, node),
                    " are interleaved with other nodes' (", RankList(ranks), ")");
    }
  }
  return "ranks are interleaved";
}

void Decide(Topology* topology) {
  using Kind = Finding::Kind;
  Topology& t = *topology;
  const int local = t.num_ranks() > 0 ? t.local_size(0) : 0;
  if (t.num_ranks() <= 1) {
    t.hierarchy = HierarchyVerdict::kSingleRank;
    t.hierarchy_reason = "one rank";
  } else if (t.num_nodes() == 1) {
    t.hierarchy = HierarchyVerdict::kSingleNode;
    t.hierarchy_reason = "all ranks on one node; nothing crosses a node boundary";
  } else if (!t.ranks_per_node_uniform) {
    t.hierarchy = HierarchyVerdict::kUnevenNodes;
    t.hierarchy_reason = UnevenNodesText(t);
  } else if (!t.nodes_contiguous) {
    t.hierarchy = HierarchyVerdict::kInterleaved;
    t.hierarchy_reason = InterleavedText(t);
  } else if (local == 1) {
    t.hierarchy = HierarchyVerdict::kOneRankPerNode;
    t.hierarchy_reason = "one rank per node; the intra-node level would be empty";
  } else {
    t.hierarchy = HierarchyVerdict::kAllowed;
    t.hierarchy_reason = "uniform, contiguous nodes";
  }
  if (t.hierarchy == HierarchyVerdict::kUnevenNodes ||
      t.hierarchy == HierarchyVerdict::kInterleaved) {
    Add(topology, Kind::kShape,
        StrCat(t.hierarchy_reason, "; ", kHierarchyOff,
               " (for hierarchical plans, place as many ranks on every node, each node's in one "
               "contiguous block; ZPP_LOCAL_SIZE or ZPP_NODE_ID set the nodes)"));
  }
  // An interleaved layout that is also uneven says so too: both need fixing.
  if (t.hierarchy == HierarchyVerdict::kUnevenNodes && !t.nodes_contiguous) {
    Add(topology, Kind::kShape, InterleavedText(t));
  }

  t.rack_level_allowed = false;
  if (t.num_racks() > 1 && t.hierarchical_allowed()) {
    if (t.nodes_per_rack_uniform && t.racks_contiguous) {
      t.rack_level_allowed = true;
    } else {
      Add(topology, Kind::kShape,
          StrCat("racks hold ",
                 t.nodes_per_rack_uniform ? "interleaved nodes" : "different numbers of nodes",
                 "; the rack level is not used, node-level hierarchical plans still allowed"));
    }
  }

  std::string summary = StrCat(t.num_ranks(), " ranks on ", t.num_nodes(), " nodes");
  if (t.ranks_per_node_uniform && t.num_ranks() > 0) summary += StrCat(" (", local, " per node)");
  summary += StrCat(" in ", t.num_racks(), t.num_racks() == 1 ? " rack" : " racks", ", grouped by ",
                    GroupingBasisName(t.basis), "; hierarchical plans ");
  summary +=
      t.hierarchical_allowed() ? std::string("allowed") : StrCat("off: ", t.hierarchy_reason);
  if (t.rack_level_allowed) summary += ", with a rack level";
  Add(topology, Kind::kNote, summary);
}

}  // namespace

Topology BuildTopology(std::span<const RankRecord> records) {
  Topology topology;
  if (records.empty()) {
    Decide(&topology);
    return topology;
  }
  topology.records.assign(records.begin(), records.end());
  GroupNodes(records, &topology);
  GroupRacks(records, &topology);
  Decide(&topology);
  return topology;
}

Topology FallbackTopology(int num_ranks, const std::string& reason) {
  Topology topology;
  topology.basis = GroupingBasis::kFallback;
  topology.racks.push_back({"", {}});
  for (int r = 0; r < num_ranks; ++r) {
    topology.node_of_rank.push_back(r);
    topology.local_rank.push_back(0);
    topology.nodes.push_back({"?", 0, {r}});
    topology.racks[0].nodes.push_back(r);
  }
  topology.hierarchy = HierarchyVerdict::kUntrustedRecords;
  topology.hierarchy_reason = reason;
  topology.findings.push_back(
      {Finding::Kind::kInputProblem,
       StrCat(reason, "; zpp treats every rank as its own node in one rack; ", kHierarchyOff,
              " (run the same zpp build on every rank)")});
  return topology;
}

}  // namespace zpp::topology
