// How libzpp.so finds the real NCCL when the framework loaded it privately (RTLD_LOCAL), as pip
// PyTorch does: the probe process loads stand-in NCCLs that way and calls two hooks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/common/run_command.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using zpp::test::RunCommand;

zpp::test::CommandRun Probe(const std::string& libraries) {
  return RunCommand("env -u ZPP_NCCL_LIBRARY ZPP_DEBUG=INFO ZPP_DEBUG_SUBSYS=PLUGIN " +
                    std::string(ZPP_FINDER_PROBE) + " " + libraries);
}

TEST(NcclFinderTest, FindsAnNcclLoadedPrivately) {
  const auto run = Probe(ZPP_FAKE_NCCL);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ncclGroupStart 0 ncclGroupEnd 0"));
  EXPECT_THAT(run.output, HasSubstr(std::string("from ") + ZPP_FAKE_NCCL));
  EXPECT_THAT(run.output, Not(HasSubstr("WARN")));
}

TEST(NcclFinderTest, NoNcclAnywhereFailsWithAWarning) {
  const auto run = Probe("");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ncclGroupStart 2"));  // ncclSystemError
  EXPECT_THAT(run.output, HasSubstr("no NCCL found"));
}

// Two NCCLs: another one loaded first, then the framework with its own. zpp takes the
// framework's and names both in a WARN.
TEST(NcclFinderTest, TwoNcclsTakeTheFrameworksAndWarnNamingBoth) {
  const auto run = Probe(std::string(ZPP_OTHER_NCCL) + " " + ZPP_FAKE_FRAMEWORK);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr(std::string("from ") + ZPP_FAKE_NCCL));
  EXPECT_THAT(run.output, HasSubstr("2 NCCL libraries are loaded"));
  EXPECT_THAT(run.output, HasSubstr(ZPP_OTHER_NCCL));
  EXPECT_THAT(run.output, HasSubstr("the one another library depends on"));
}

// ZPP_NCCL_LIBRARY still comes first.
TEST(NcclFinderTest, TheVariableComesFirst) {
  const auto run = RunCommand(std::string("ZPP_DEBUG=INFO ZPP_DEBUG_SUBSYS=PLUGIN ") +
                              "ZPP_NCCL_LIBRARY=" + ZPP_OTHER_NCCL + " " + ZPP_FINDER_PROBE + " " +
                              ZPP_FAKE_NCCL);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr(std::string("from ") + ZPP_OTHER_NCCL));
}

}  // namespace
