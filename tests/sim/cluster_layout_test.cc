#include "sim/cluster_layout.h"

#include <gtest/gtest.h>

namespace zpp::sim {
namespace {

using Members = std::vector<int>;

TEST(ClusterLayoutTest, TwoNodesOfFour) {
  const ClusterLayout layout = ClusterLayout::Uniform(2, 4);
  EXPECT_EQ(layout.world_size(), 8);
  EXPECT_EQ(layout.GroupOf(5, GroupKind::kWorld), (Members{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(layout.GroupOf(5, GroupKind::kIntraNode), (Members{4, 5, 6, 7}));
  EXPECT_EQ(layout.GroupOf(5, GroupKind::kInterNode), (Members{1, 5}));
  EXPECT_EQ(layout.LinkBetween(0, 3), zppLinkIntraNode);
  EXPECT_EQ(layout.LinkBetween(0, 4), zppLinkInterNode);
}

TEST(ClusterLayoutTest, TwoRacksOfTwoNodesOfTwo) {
  const ClusterLayout layout = ClusterLayout::Uniform(4, 2, 2);
  // ranks 0,1 node 0; 2,3 node 1 (rack 0); 4,5 node 2; 6,7 node 3 (rack 1)
  EXPECT_EQ(layout.LinkBetween(0, 2), zppLinkInterNode);
  EXPECT_EQ(layout.LinkBetween(0, 4), zppLinkInterRack);
  EXPECT_EQ(layout.GroupOf(3, GroupKind::kIntraRack), (Members{1, 3}));
  EXPECT_EQ(layout.GroupOf(3, GroupKind::kInterRack), (Members{3, 7}));
  EXPECT_EQ(layout.GroupOf(3, GroupKind::kInterNode), (Members{1, 3, 5, 7}));
}

TEST(ClusterLayoutTest, InterleavedNodesGroupByNode) {
  ClusterLayout layout;
  layout.node_of_rank = {0, 1, 0, 1};
  layout.rack_of_node = {0, 0};
  EXPECT_EQ(layout.GroupOf(0, GroupKind::kIntraNode), (Members{0, 2}));
  EXPECT_EQ(layout.GroupOf(2, GroupKind::kInterNode), (Members{2, 3}));
}

}  // namespace
}  // namespace zpp::sim
