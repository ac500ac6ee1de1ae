#include "topology/plan_shape.h"

#include <gtest/gtest.h>

#include "record_builder.h"
#include "topology/grouping.h"

namespace zpp::topology {
namespace {

using test_support::Blocks;
using test_support::Record;

TEST(PlanShapeTest, ThreeLevelsGiveTheirSizesAndBothVerdicts) {
  const plan::Shape shape = ShapeOf(BuildTopology(Blocks(4, 2, 2)));
  EXPECT_EQ(shape.world, 8);
  EXPECT_EQ(shape.nodes, 4);
  EXPECT_EQ(shape.min_local_size, 2);
  EXPECT_EQ(shape.racks, 2);
  EXPECT_EQ(shape.nodes_per_rack, 2);
  EXPECT_TRUE(shape.hierarchical_allowed);
  EXPECT_TRUE(shape.rack_level_allowed);
  EXPECT_TRUE(shape.config_agreed);
}

TEST(PlanShapeTest, UnevenNodesGiveTheSmallestAndNoHierarchy) {
  std::vector<RankRecord> records = {Record("a"), Record("a"), Record("a"), Record("b"),
                                     Record("b")};
  const plan::Shape shape = ShapeOf(BuildTopology(records));
  EXPECT_EQ(shape.world, 5);
  EXPECT_EQ(shape.nodes, 2);
  EXPECT_EQ(shape.min_local_size, 2);
  EXPECT_EQ(shape.racks, 1);
  EXPECT_EQ(shape.nodes_per_rack, 2);
  EXPECT_FALSE(shape.hierarchical_allowed);
  EXPECT_FALSE(shape.rack_level_allowed);
}

TEST(PlanShapeTest, FallbackIsFlat) {
  const plan::Shape shape = ShapeOf(FallbackTopology(4, "test"));
  EXPECT_EQ(shape.world, 4);
  EXPECT_EQ(shape.nodes, 4);
  EXPECT_EQ(shape.min_local_size, 1);
  EXPECT_FALSE(shape.hierarchical_allowed);
}

TEST(PlanShapeTest, EmptyTopologyIsOneRankShape) {
  const plan::Shape shape = ShapeOf(Topology{});
  EXPECT_EQ(shape.world, 0);
  EXPECT_EQ(shape.nodes, 1);
  EXPECT_EQ(shape.min_local_size, 1);
  EXPECT_EQ(shape.racks, 1);
  EXPECT_FALSE(shape.hierarchical_allowed);
}

}  // namespace
}  // namespace zpp::topology
