// Issue 29, item 2: a requested technique the topology leaves idle or pointless is named, with
// the reason and what would make it run (once per communicator, WARN, from its rank 0).
#include "engine/idle_requests.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "record_builder.h"
#include "topology/grouping.h"

namespace zpp::topology {
namespace {

using test_support::Blocks;
using ::testing::HasSubstr;

plan::Settings ZeroPlusPlus() {
  plan::Settings settings;
  settings.qwz = settings.hpz = settings.qgz = true;
  return settings;
}

TEST(IdleRequestsTest, OneNodeNamesEveryTechniqueThatSavesNothing) {
  const auto lines = engine::IdleRequestWarnings(ZeroPlusPlus(), BuildTopology(Blocks(1, 4)));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("ZPP_HPZ=1 does nothing on this communicator (4 ranks on 1 "
                                  "node(s): all ranks on one node"));
  EXPECT_THAT(lines[0], HasSubstr("at least 2 nodes of at least 2 ranks each"));
  // The lossy ones are off there (their calls pass through), unless forced for a test.
  EXPECT_THAT(lines[1], HasSubstr("ZPP_QGZ=1 is off on this communicator"));
  EXPECT_THAT(lines[1], HasSubstr("would save no inter-node byte"));
  EXPECT_THAT(lines[1], HasSubstr("ZPP_LOSSY_ONE_NODE=1 runs it"));
  EXPECT_THAT(lines[2], HasSubstr("ZPP_QWZ=1 is off on this communicator"));
  plan::Settings forced = ZeroPlusPlus();
  forced.lossy_on_one_node = true;
  const auto forced_lines = engine::IdleRequestWarnings(forced, BuildTopology(Blocks(1, 4)));
  ASSERT_EQ(forced_lines.size(), 3u);
  EXPECT_THAT(forced_lines[2], HasSubstr("it runs because ZPP_LOSSY_ONE_NODE=1"));
}

TEST(IdleRequestsTest, OneRankPerNodeLeavesHpzAndQgzLevelsIdleButQwzWorks) {
  const auto lines = engine::IdleRequestWarnings(ZeroPlusPlus(), BuildTopology(Blocks(4, 1)));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("ZPP_HPZ=1 does nothing"));
  EXPECT_THAT(lines[0], HasSubstr("one rank per node"));
  EXPECT_THAT(lines[1], HasSubstr("ZPP_QGZ=1 runs without its node levels"));
  EXPECT_THAT(lines[1], HasSubstr("ZPP_LOCAL_SIZE"));
}

// Issue 46: the compressed all-reduce asked for where it cannot run is a WARN too.
TEST(IdleRequestsTest, QarOnOneNodeIsNamedAndOneRankPerNodeRunsIt) {
  plan::Settings qar;
  qar.qar = true;
  const auto lines = engine::IdleRequestWarnings(qar, BuildTopology(Blocks(1, 4)));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("ZPP_QAR=1 is off on this communicator (4 ranks on 1 node(s)"));
  EXPECT_THAT(lines[0], HasSubstr("(reason one-node)"));
  EXPECT_TRUE(engine::IdleRequestWarnings(qar, BuildTopology(Blocks(4, 1))).empty());
  EXPECT_TRUE(engine::IdleRequestWarnings(qar, BuildTopology(Blocks(2, 2))).empty());
}

TEST(IdleRequestsTest, NothingToSayWhereEveryTechniqueCanRunOrNoneIsAsked) {
  EXPECT_TRUE(engine::IdleRequestWarnings(ZeroPlusPlus(), BuildTopology(Blocks(2, 4))).empty());
  EXPECT_TRUE(engine::IdleRequestWarnings(plan::Settings{}, BuildTopology(Blocks(1, 4))).empty());
  EXPECT_TRUE(engine::IdleRequestWarnings(ZeroPlusPlus(), BuildTopology(Blocks(1, 1))).empty());
}

}  // namespace
}  // namespace zpp::topology
