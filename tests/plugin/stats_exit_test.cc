// ZPP_STATS=1: a process that used the hooks prints the stats table when it exits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/common/run_command.h"

namespace {

const std::string kChild = std::string("ZPP_NCCL_LIBRARY=") + ZPP_FAKE_NCCL + " " + ZPP_HOOK_TESTS +
                           " --gtest_filter=HooksTest.ProcessStats*";

TEST(StatsExitTest, TableAtExitWithZppStats) {
  const std::string output = zpp::test::RunCommand("ZPP_STATS=1 " + kChild).output;
  EXPECT_THAT(output, ::testing::HasSubstr("zpp stats: per communicator and technique"));
  EXPECT_THAT(output, ::testing::HasSubstr("pass-through reasons: one-rank=1"));
  EXPECT_THAT(output, ::testing::HasSubstr("pass-through reasons: unavailable=1"));
}

TEST(StatsExitTest, NoTableWithoutIt) {
  const std::string output = zpp::test::RunCommand("ZPP_STATS=0 " + kChild).output;
  EXPECT_THAT(output, ::testing::HasSubstr("PASSED"));
  EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr("zpp stats")));
}

}  // namespace

namespace {

// ZPP_PROGRESS=2 over three epochs: one line, at the second (issue 29, item 1).
TEST(StatsExitTest, ProgressLineEveryNEpochs) {
  const std::string child = std::string("ZPP_NCCL_LIBRARY=") + ZPP_FAKE_NCCL + " " +
                            ZPP_HOOK_TESTS + " --gtest_filter=HooksTest.ProgressAtEpochAdvance";
  const std::string output = zpp::test::RunCommand("ZPP_PROGRESS=2 " + child).output;
  EXPECT_THAT(output, ::testing::HasSubstr("zpp progress: step 2, rank 0/4, 2 communicator(s): 1 "
                                           "calls, 0 through zpp's plans, 1 passed through"));
  EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr("zpp progress: step 1")));
  EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr("zpp progress: step 3")));
  EXPECT_THAT(zpp::test::RunCommand(child).output,
              ::testing::Not(::testing::HasSubstr("zpp progress")));
}

// A process that made no communicator (a launcher under zpp-run --stats) prints no empty table.
TEST(StatsExitTest, NoTableWithoutCommunicators) {
  const std::string output =
      zpp::test::RunCommand(std::string("ZPP_STATS=1 ZPP_NCCL_LIBRARY=") + ZPP_FAKE_NCCL + " " +
                            ZPP_HOOK_TESTS + " --gtest_filter=HooksTest.NoSuchTest")
          .output;
  EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr("zpp stats")));
}

}  // namespace
