// ZPP_PROGRESS's line (issue 29, item 1): its content from counters set by hand, which process
// prints it, and at which steps.
#include "plugin/progress_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace zpp::plugin {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

CommStatsRow Row(int rank, int nranks) {
  CommStatsRow row;
  row.rank = rank;
  row.nranks = nranks;
  return row;
}

TEST(ProgressLineTest, SumsTheProcessCommunicators) {
  CommStatsRow world = Row(0, 4);
  world.stats.calls[zppPathHpz] = 30;
  world.stats.calls[zppPathQgz] = 60;
  world.stats.calls[zppPathPassThrough] = 12;
  world.stats.passthrough[zppReasonSmall] = 10;
  world.stats.passthrough[zppReasonDtype] = 2;
  world.stats.sent_bytes[zppLinkInterNode] = 3 << 20;
  world.stats.sent_bytes[zppLinkIntraNode] = 100 << 20;  // not off the node
  world.stats.plain_off_node_bytes = 12 << 20;
  world.stats.hpz_hits = 28;
  world.stats.hpz_misses = 2;
  CommStatsRow pair = Row(1, 2);
  pair.stats.calls[zppPathQgz] = 4;
  pair.stats.sent_bytes[zppLinkInterRack] = 1 << 20;
  pair.stats.plain_off_node_bytes = 4 << 20;
  EXPECT_EQ(FormatProgressLine(100, {world, pair}),
            "zpp progress: step 100, rank 0/4, 2 communicator(s): 106 calls, 94 through zpp's "
            "plans (hpZ 30, qgZ 64), 12 passed through (dtype 2, small 10); off-node bytes 4.0 "
            "MiB, 0.250 of plain; hpZ 28 hits, 2 misses, 0 verification failures");
}

TEST(ProgressLineTest, NothingCompressedSaysSoAndLeavesOutWhatDidNotHappen) {
  CommStatsRow row = Row(0, 2);
  row.stats.calls[zppPathPassThrough] = 5;
  row.stats.passthrough[zppReasonSmall] = 5;
  const std::string line = FormatProgressLine(7, {row});
  EXPECT_THAT(line, HasSubstr("5 calls, 0 through zpp's plans, 5 passed through (small 5)"));
  EXPECT_THAT(line, Not(HasSubstr("of plain")));
  EXPECT_THAT(line, Not(HasSubstr("hpZ")));
}

TEST(ProgressLineTest, OnlyRankZeroOfTheLargestCommunicatorSpeaks) {
  EXPECT_TRUE(SpeaksForJob({Row(1, 2), Row(0, 8)}));
  EXPECT_FALSE(SpeaksForJob({Row(0, 2), Row(3, 8)}));  // rank 0 of a sub-group only
  EXPECT_FALSE(SpeaksForJob({}));
}

TEST(ProgressLineTest, DueEveryNSteps) {
  EXPECT_FALSE(ProgressDue(10, 0));  // off
  EXPECT_TRUE(ProgressDue(10, 5));
  EXPECT_FALSE(ProgressDue(11, 5));
  EXPECT_TRUE(ProgressDue(1, 1));
}

}  // namespace
}  // namespace zpp::plugin
