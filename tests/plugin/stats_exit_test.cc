// ZPP_STATS=1: a process that used the hooks prints the stats table when it exits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

std::string RunShell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "";
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  pclose(pipe);
  return output;
}

const std::string kChild = std::string("ZPP_NCCL_LIBRARY=") + ZPP_FAKE_NCCL + " " + ZPP_HOOK_TESTS +
                           " --gtest_filter=HooksTest.ProcessStats*";

TEST(StatsExitTest, TableAtExitWithZppStats) {
  const std::string output = RunShell("ZPP_STATS=1 " + kChild);
  EXPECT_THAT(output, ::testing::HasSubstr("zpp stats: per communicator and technique"));
  EXPECT_THAT(output, ::testing::HasSubstr("pass-through reasons: one-rank=1"));
  EXPECT_THAT(output, ::testing::HasSubstr("pass-through reasons: unavailable=1"));
}

TEST(StatsExitTest, NoTableWithoutIt) {
  const std::string output = RunShell("ZPP_STATS=0 " + kChild);
  EXPECT_THAT(output, ::testing::HasSubstr("PASSED"));
  EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr("zpp stats")));
}

}  // namespace
