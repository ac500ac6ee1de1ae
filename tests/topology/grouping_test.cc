// The grouping of ranks into nodes and racks, and the verdict on hierarchical plans, for the
// layouts the issue names and the bad inputs it lists.
#include "topology/grouping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "record_builder.h"
#include "topology/str_cat.h"

namespace zpp::topology {
namespace {

using test_support::Blocks;
using test_support::Record;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<std::string> Texts(const Topology& topology, Finding::Kind kind) {
  std::vector<std::string> out;
  for (const Finding& finding : topology.findings) {
    if (finding.kind == kind) out.push_back(finding.text);
  }
  return out;
}

// Checks the block layout `nodes` x `per_node`: node r / per_node, local rank r % per_node.
void ExpectBlocks(const Topology& t, int nodes, int per_node) {
  ASSERT_EQ(t.num_ranks(), nodes * per_node);
  ASSERT_EQ(t.num_nodes(), nodes);
  for (int r = 0; r < t.num_ranks(); ++r) {
    EXPECT_EQ(t.node_of_rank[static_cast<size_t>(r)], r / per_node) << "rank " << r;
    EXPECT_EQ(t.local_rank[static_cast<size_t>(r)], r % per_node) << "rank " << r;
    EXPECT_EQ(t.local_size(r), per_node);
  }
  for (int n = 0; n < nodes; ++n) {
    EXPECT_EQ(t.nodes[static_cast<size_t>(n)].host, StrCat("n", n));
  }
  EXPECT_TRUE(t.ranks_per_node_uniform);
  EXPECT_TRUE(t.nodes_contiguous);
  EXPECT_EQ(t.basis, GroupingBasis::kHosts);
}

TEST(GroupingTest, OneNode) {
  const Topology t = BuildTopology(Blocks(1, 8));
  ExpectBlocks(t, 1, 8);
  EXPECT_EQ(t.num_racks(), 1);
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kSingleNode);
  EXPECT_FALSE(t.hierarchical_allowed());
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem), IsEmpty());
  EXPECT_THAT(Texts(t, Finding::Kind::kShape), IsEmpty());
  EXPECT_THAT(Texts(t, Finding::Kind::kNote),
              ElementsAre("8 ranks on 1 nodes (8 per node) in 1 rack, grouped by hosts; "
                          "hierarchical plans off: all ranks on one node; nothing crosses a node "
                          "boundary"));
}

TEST(GroupingTest, OneRankPerNode) {
  const Topology t = BuildTopology(Blocks(8, 1));
  ExpectBlocks(t, 8, 1);
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kOneRankPerNode);
  EXPECT_FALSE(t.hierarchical_allowed());
  EXPECT_THAT(Texts(t, Finding::Kind::kShape), IsEmpty());  // a fine layout, just flat
}

TEST(GroupingTest, TwoNodesOfFour) {
  const Topology t = BuildTopology(Blocks(2, 4));
  ExpectBlocks(t, 2, 4);
  EXPECT_TRUE(t.hierarchical_allowed());
  EXPECT_FALSE(t.rack_level_allowed);  // one rack
  EXPECT_THAT(Texts(t, Finding::Kind::kNote),
              ElementsAre("8 ranks on 2 nodes (4 per node) in 1 rack, grouped by hosts; "
                          "hierarchical plans allowed"));
}

TEST(GroupingTest, FourNodesOfTwo) {
  const Topology t = BuildTopology(Blocks(4, 2));
  ExpectBlocks(t, 4, 2);
  EXPECT_TRUE(t.hierarchical_allowed());
}

TEST(GroupingTest, SixteenNodesOfEight) {
  const Topology t = BuildTopology(Blocks(16, 8));
  ExpectBlocks(t, 16, 8);
  EXPECT_TRUE(t.hierarchical_allowed());
  EXPECT_EQ(t.nodes[15].ranks.front(), 120);
  EXPECT_EQ(t.nodes[15].ranks.back(), 127);
}

TEST(GroupingTest, InterleavedRanksDisableHierarchicalPlans) {
  // Round-robin placement: rank r on host r % 2.
  std::vector<RankRecord> records;
  for (int r = 0; r < 8; ++r) records.push_back(Record(StrCat("n", r % 2)));
  const Topology t = BuildTopology(records);
  ASSERT_EQ(t.num_nodes(), 2);
  EXPECT_THAT(t.nodes[0].ranks, ElementsAre(0, 2, 4, 6));
  EXPECT_THAT(t.nodes[1].ranks, ElementsAre(1, 3, 5, 7));
  EXPECT_THAT(t.local_rank, ElementsAre(0, 0, 1, 1, 2, 2, 3, 3));
  EXPECT_TRUE(t.ranks_per_node_uniform);
  EXPECT_FALSE(t.nodes_contiguous);
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kInterleaved);
  EXPECT_FALSE(t.hierarchical_allowed());
  EXPECT_THAT(Texts(t, Finding::Kind::kShape),
              ElementsAre("the ranks of node 0 (host n0) are interleaved with other nodes' "
                          "(0,2,4,6); hierarchical plans disabled for this communicator, flat "
                          "quantized plans still allowed (for hierarchical plans, place as many "
                          "ranks on every node, each node's in one contiguous block; "
                          "ZPP_LOCAL_SIZE or ZPP_NODE_ID set the nodes)"));
}

TEST(GroupingTest, UnevenNodesDisableHierarchicalPlans) {
  std::vector<RankRecord> records = Blocks(1, 3);
  for (const RankRecord& record : Blocks(2, 4)) {
    if (FieldText(record.host_name) == "n1") records.push_back(record);
  }
  const Topology t = BuildTopology(records);
  ASSERT_EQ(t.num_nodes(), 2);
  EXPECT_THAT(t.nodes[0].ranks, ElementsAre(0, 1, 2));
  EXPECT_THAT(t.nodes[1].ranks, ElementsAre(3, 4, 5, 6));
  EXPECT_EQ(t.local_size(0), 3);
  EXPECT_EQ(t.local_size(6), 4);
  EXPECT_FALSE(t.ranks_per_node_uniform);
  EXPECT_TRUE(t.nodes_contiguous);
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kUnevenNodes);
  EXPECT_THAT(Texts(t, Finding::Kind::kShape),
              ElementsAre("ranks per node are uneven (3 on node 0 (host n0), 4 on node 1 (host "
                          "n1)); hierarchical plans disabled for this communicator, flat "
                          "quantized plans still allowed (for hierarchical plans, place as many "
                          "ranks on every node, each node's in one contiguous block; "
                          "ZPP_LOCAL_SIZE or ZPP_NODE_ID set the nodes)"));
  EXPECT_THAT(Texts(t, Finding::Kind::kNote),
              ElementsAre(HasSubstr("7 ranks on 2 nodes in 1 rack")));
}

TEST(GroupingTest, UnevenAndInterleavedSaysBoth) {
  std::vector<RankRecord> records;
  for (const char* host : {"a", "b", "a", "b", "b"}) records.push_back(Record(host));
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kUnevenNodes);
  EXPECT_THAT(Texts(t, Finding::Kind::kShape),
              ElementsAre(HasSubstr("uneven"), HasSubstr("interleaved")));
}

TEST(GroupingTest, TwoRacksOfTwoNodesOfTwoRanks) {
  const Topology t = BuildTopology(Blocks(4, 2, 2));
  ExpectBlocks(t, 4, 2);
  ASSERT_EQ(t.num_racks(), 2);
  EXPECT_EQ(t.racks[0].name, "r0");
  EXPECT_EQ(t.racks[1].name, "r1");
  EXPECT_THAT(t.racks[0].nodes, ElementsAre(0, 1));
  EXPECT_THAT(t.racks[1].nodes, ElementsAre(2, 3));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(t.rack_of_rank(r), r / 4) << "rank " << r;
  EXPECT_TRUE(t.nodes_per_rack_uniform);
  EXPECT_TRUE(t.racks_contiguous);
  EXPECT_TRUE(t.hierarchical_allowed());
  EXPECT_TRUE(t.rack_level_allowed);
  EXPECT_THAT(Texts(t, Finding::Kind::kNote), ElementsAre(HasSubstr("in 2 racks")));
  EXPECT_THAT(Texts(t, Finding::Kind::kNote), ElementsAre(HasSubstr("with a rack level")));
}

TEST(GroupingTest, UnevenRacksKeepNodeLevelButDropRackLevel) {
  const std::vector<std::string> racks = {"r0", "r0", "r0", "r1"};
  std::vector<RankRecord> records;
  for (int h = 0; h < 4; ++h) {
    for (int i = 0; i < 2; ++i) records.push_back(Record(StrCat("n", h), racks[h]));
  }
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.num_racks(), 2);
  EXPECT_FALSE(t.nodes_per_rack_uniform);
  EXPECT_TRUE(t.hierarchical_allowed());
  EXPECT_FALSE(t.rack_level_allowed);
  EXPECT_THAT(Texts(t, Finding::Kind::kShape),
              ElementsAre("racks hold different numbers of nodes; the rack level is not used, "
                          "node-level hierarchical plans still allowed"));
}

TEST(GroupingTest, InterleavedRacksDropRackLevel) {
  const std::vector<std::string> racks = {"r0", "r1", "r0", "r1"};
  std::vector<RankRecord> records;
  for (int h = 0; h < 4; ++h) {
    for (int i = 0; i < 2; ++i) records.push_back(Record(StrCat("n", h), racks[h]));
  }
  const Topology t = BuildTopology(records);
  EXPECT_THAT(t.racks[0].nodes, ElementsAre(0, 2));
  EXPECT_FALSE(t.racks_contiguous);
  EXPECT_TRUE(t.hierarchical_allowed());
  EXPECT_FALSE(t.rack_level_allowed);
  EXPECT_THAT(Texts(t, Finding::Kind::kShape), ElementsAre(HasSubstr("interleaved nodes")));
}

TEST(GroupingTest, RanksOfOneHostInDifferentRacksMakeOneRack) {
  std::vector<RankRecord> records = {Record("n0", "r0"), Record("n0", "r1"), Record("n1", "r1"),
                                     Record("n1", "r1")};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.num_racks(), 1);
  EXPECT_EQ(t.racks[0].name, "");
  EXPECT_THAT(t.racks[0].nodes, ElementsAre(0, 1));
  EXPECT_TRUE(t.hierarchical_allowed());  // the node level is still sound
  EXPECT_FALSE(t.rack_level_allowed);
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem),
              ElementsAre("ranks 0 and 1 share node 0 (host n0) but claim racks 'r0' and 'r1'; "
                          "zpp treats the communicator as one rack (give every rank of a node the "
                          "same rack through ZPP_RACK_ID, ZPP_TOPO_FILE or SLURM_TOPOLOGY_ADDR, "
                          "on all ranks or none)"));
}

TEST(GroupingTest, SomeRanksWithoutRackMakeOneRack) {
  std::vector<RankRecord> records = {Record("n0", "r0"), Record("n0", "r0"), Record("n1", ""),
                                     Record("n1", "")};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.num_racks(), 1);
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem),
              ElementsAre("rank 2 (host n1) has no rack id but rank 0 (host n0) is in rack 'r0' "
                          "(from ZPP_RACK_ID); zpp treats the communicator as one rack (give every "
                          "rank of a node the same rack through ZPP_RACK_ID, ZPP_TOPO_FILE or "
                          "SLURM_TOPOLOGY_ADDR, on all ranks or none)"));
}

TEST(GroupingTest, InvalidRackTokenMakesOneRack) {
  std::vector<RankRecord> records = {Record("n0", "r0"), Record("n1", "rack\x01/7")};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.num_racks(), 1);
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem),
              ElementsAre("rank 1 (host n1) sent rack id 'rack?/7', which is not a token "
                          "([A-Za-z0-9._:-]); zpp treats the communicator as one rack (give every "
                          "rank of a node the same rack through ZPP_RACK_ID, ZPP_TOPO_FILE or "
                          "SLURM_TOPOLOGY_ADDR, on all ranks or none)"));
}

TEST(GroupingTest, LocalSizeOverrideSplitsOneHostIntoNodes) {
  std::vector<RankRecord> records;
  for (int r = 0; r < 8; ++r) records.push_back(Record("box", "", -1, 4));
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.basis, GroupingBasis::kLocalSizeOverride);
  ASSERT_EQ(t.num_nodes(), 2);
  EXPECT_THAT(t.nodes[1].ranks, ElementsAre(4, 5, 6, 7));
  EXPECT_TRUE(t.hierarchical_allowed());
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem), IsEmpty());
}

// HSDP's replicate group {0, 2} of 2 simulated nodes x 2 ranks: its communicator ranks 0 and 1
// would make one node; the launcher's ranks put each on its own.
TEST(GroupingTest, LocalSizeOverrideNumbersNodesByTheLauncherRank) {
  std::vector<RankRecord> records = {Record("box", "", -1, 2, 0), Record("box", "", -1, 2, 2)};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.basis, GroupingBasis::kLocalSizeOverride);
  EXPECT_EQ(t.num_nodes(), 2);
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kOneRankPerNode);
  // The shard group {2, 3}: one node.
  const std::vector<RankRecord> shard = {Record("box", "", -1, 2, 2), Record("box", "", -1, 2, 3)};
  EXPECT_EQ(BuildTopology(shard).num_nodes(), 1);
  EXPECT_THAT(Texts(t, Finding::Kind::kNote), Not(Contains(HasSubstr("RANK"))));
}

// Ranks that are threads of one process share its RANK: communicator ranks number the nodes.
TEST(GroupingTest, LocalSizeOverrideWithRepeatedLauncherRanksUsesCommunicatorRanks) {
  std::vector<RankRecord> records;
  for (int r = 0; r < 4; ++r) records.push_back(Record("box", "", -1, 2, 5));
  const Topology t = BuildTopology(records);
  ASSERT_EQ(t.num_nodes(), 2);
  EXPECT_THAT(t.nodes[1].ranks, ElementsAre(2, 3));
  EXPECT_THAT(Texts(t, Finding::Kind::kNote),
              Contains(HasSubstr("RANK is missing or repeated among this communicator's ranks")));
}

TEST(GroupingTest, LocalSizeOverrideThatDoesNotDivideIsUneven) {
  std::vector<RankRecord> records;
  for (int r = 0; r < 7; ++r) records.push_back(Record("box", "", -1, 4));
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.num_nodes(), 2);
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kUnevenNodes);
}

TEST(GroupingTest, LocalSizeOverrideWithRacksPerSimulatedNode) {
  // One machine acting as 2 racks x 2 nodes x 2 ranks: racks are checked per simulated node,
  // so ranks of one host in different racks are fine here.
  std::vector<RankRecord> records;
  for (int r = 0; r < 8; ++r) records.push_back(Record("box", r < 4 ? "ra" : "rb", -1, 2));
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.num_nodes(), 4);
  EXPECT_EQ(t.num_racks(), 2);
  EXPECT_TRUE(t.rack_level_allowed);
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem), IsEmpty());
}

TEST(GroupingTest, NodeIdOverrideGroupsByTheGivenIds) {
  std::vector<RankRecord> records = {Record("box", "", 7), Record("box", "", 7),
                                     Record("box", "", 3), Record("box", "", 3)};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.basis, GroupingBasis::kNodeIdOverride);
  ASSERT_EQ(t.num_nodes(), 2);
  EXPECT_THAT(t.nodes[0].ranks, ElementsAre(0, 1));  // numbered by lowest rank, not by id
  EXPECT_TRUE(t.hierarchical_allowed());
}

TEST(GroupingTest, NodeIdOverrideWinsOverLocalSize) {
  std::vector<RankRecord> records = {Record("box", "", 0, 1), Record("box", "", 0, 1),
                                     Record("box", "", 1, 1), Record("box", "", 1, 1)};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.basis, GroupingBasis::kNodeIdOverride);
  EXPECT_EQ(t.num_nodes(), 2);
}

TEST(GroupingTest, NodeIdOnSomeRanksOnlyIsIgnored) {
  std::vector<RankRecord> records = {Record("n0", "", 0), Record("n0", "", 0), Record("n1", ""),
                                     Record("n1", "", 1)};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.basis, GroupingBasis::kHosts);
  EXPECT_EQ(t.num_nodes(), 2);
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem),
              ElementsAre("ZPP_NODE_ID is set on 3 of 4 ranks (not on rank 2 (host n1)); zpp "
                          "ignores ZPP_NODE_ID for this communicator (set it on every rank or on "
                          "none)"));
}

TEST(GroupingTest, DisagreeingLocalSizeIsIgnored) {
  std::vector<RankRecord> records = {Record("n0", "", -1, 2), Record("n0", "", -1, 2),
                                     Record("n1", "", -1, 4), Record("n1", "", -1, 2)};
  const Topology t = BuildTopology(records);
  EXPECT_EQ(t.basis, GroupingBasis::kHosts);
  EXPECT_THAT(Texts(t, Finding::Kind::kInputProblem),
              ElementsAre("ranks disagree on ZPP_LOCAL_SIZE (rank 0: 2, rank 2 (host n1): 4); "
                          "zpp ignores ZPP_LOCAL_SIZE for this communicator (set the same value on "
                          "every rank)"));
}

TEST(GroupingTest, OneRankAndNoRanks) {
  const Topology one = BuildTopology(Blocks(1, 1));
  EXPECT_EQ(one.num_nodes(), 1);
  EXPECT_EQ(one.hierarchy, HierarchyVerdict::kSingleRank);
  const Topology none = BuildTopology({});
  EXPECT_EQ(none.num_ranks(), 0);
  EXPECT_EQ(none.hierarchy, HierarchyVerdict::kSingleRank);
}

TEST(GroupingTest, FallbackPutsEveryRankOnItsOwnNode) {
  const Topology t = FallbackTopology(3, "the topology record of rank 1 is garbage");
  EXPECT_EQ(t.basis, GroupingBasis::kFallback);
  EXPECT_EQ(t.num_nodes(), 3);
  EXPECT_EQ(t.num_racks(), 1);
  EXPECT_THAT(t.local_rank, ElementsAre(0, 0, 0));
  EXPECT_EQ(t.hierarchy, HierarchyVerdict::kUntrustedRecords);
  EXPECT_THAT(
      Texts(t, Finding::Kind::kInputProblem),
      ElementsAre("the topology record of rank 1 is garbage; zpp treats every rank as "
                  "its own node in one rack; hierarchical plans disabled for this "
                  "communicator, flat quantized plans still allowed (run the same zpp build "
                  "on every rank)"));
}

}  // namespace
}  // namespace zpp::topology
