#include "topology/slurm_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace zpp::topology {
namespace {

using ::testing::HasSubstr;

TEST(SlurmTopologyTest, RackIsTheSwitchAboveTheNode) {
  const SlurmRack slurm = RackFromSlurmTopologyAddr("s0.s4.tux4", std::nullopt);
  EXPECT_EQ(slurm.rack, "s4");
  EXPECT_TRUE(slurm.problem.empty());
  EXPECT_EQ(RackFromSlurmTopologyAddr("leaf-07.node1", std::nullopt).rack, "leaf-07");
}

TEST(SlurmTopologyTest, PatternSaysWhichComponentIsTheNode) {
  EXPECT_EQ(RackFromSlurmTopologyAddr("core.leaf3.node07", "switch.switch.node").rack, "leaf3");
  // A pattern that puts the node elsewhere than last still picks the switch right above it.
  EXPECT_EQ(RackFromSlurmTopologyAddr("a.b.node07.x", "switch.switch.node.other").rack, "b");
}

TEST(SlurmTopologyTest, NodeWithoutSwitchHasNoRackAndNoProblem) {
  const SlurmRack slurm = RackFromSlurmTopologyAddr("tux4", "node");
  EXPECT_FALSE(slurm.rack);
  EXPECT_TRUE(slurm.problem.empty());
}

TEST(SlurmTopologyTest, MalformedAddressesAreProblems) {
  EXPECT_THAT(RackFromSlurmTopologyAddr("s0..tux4", std::nullopt).problem,
              HasSubstr("empty component"));
  EXPECT_THAT(RackFromSlurmTopologyAddr("", std::nullopt).problem, HasSubstr("empty component"));
  EXPECT_THAT(RackFromSlurmTopologyAddr("s0.s4.tux4", "switch.node").problem,
              HasSubstr("has 3 components but SLURM_TOPOLOGY_ADDR_PATTERN has 2"));
  EXPECT_THAT(RackFromSlurmTopologyAddr("s0.tux4", "switch.switch").problem,
              HasSubstr("no 'node'"));
  const SlurmRack bad = RackFromSlurmTopologyAddr("s0.sw/4.tux4", std::nullopt);
  EXPECT_FALSE(bad.rack);
  EXPECT_THAT(bad.problem, HasSubstr("names switch 'sw/4', which is not a token"));
}

}  // namespace
}  // namespace zpp::topology
