// The process configuration end to end: bad values in the real environment of a process give
// exactly one WARN each on stderr, and the process goes on with the defaults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/common/run_command.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

zpp::test::CommandRun RunZppEnv(const std::string& env) {
  return zpp::test::RunCommand("env -i " + env + " " + ZPP_ENV_BINARY);
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t count = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++count;
  }
  return count;
}

TEST(EnvProcessTest, BadValuesWarnOnceEachAndUseDefaults) {
  const zpp::test::CommandRun run =
      RunZppEnv("ZPP_BLOCK=abc ZPP_QWZ_BITS=3 ZPP_MIN_BYTES=-1 ZPP_QWZ=1");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(Count(run.output, "ZPP WARN"), 3u) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("ZPP WARN ZPP_BLOCK=\"abc\" is not an integer; using the default 256"));
  EXPECT_THAT(run.output, HasSubstr("ZPP WARN ZPP_QWZ_BITS=\"3\" is not 4 or 8; using the "
                                    "default 8"));
  EXPECT_THAT(run.output, HasSubstr("ZPP_MIN_BYTES=\"-1\" is out of range"));
  EXPECT_THAT(run.output, HasSubstr("src/config/config.cc:"));  // WARN lines carry file:line
  EXPECT_THAT(run.output, testing::ContainsRegex("ZPP_QWZ +1 +set"));
  // Issue 29, item 9: a rejected value shows as rejected, with the default zpp uses.
  EXPECT_THAT(run.output, testing::ContainsRegex("ZPP_BLOCK +256 +rejected, default used"));
}

TEST(EnvProcessTest, DebugNoneSilencesWarnings) {
  const zpp::test::CommandRun run = RunZppEnv("ZPP_DEBUG=NONE ZPP_BLOCK=abc");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, Not(HasSubstr("ZPP WARN")));
}

TEST(EnvProcessTest, BadDebugLevelWarnsAtDefaultLevel) {
  const zpp::test::CommandRun run = RunZppEnv("ZPP_DEBUG=LOUD");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(Count(run.output, "ZPP WARN"), 1u) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ZPP_DEBUG=\"LOUD\" is not a level"));
}

TEST(EnvProcessTest, CleanEnvironmentIsSilent) {
  const zpp::test::CommandRun run = RunZppEnv("ZPP_QWZ=1");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, Not(HasSubstr("ZPP WARN")));
}

// Issue 29, item 3: a misspelt variable gets one WARN naming the closest known variable, and
// zpp-env lists it apart; the variables zpp's own tools set are not taken for typos.
TEST(EnvProcessTest, UnknownNamesWarnOnceWithTheClosestKnownName) {
  const zpp::test::CommandRun run =
      RunZppEnv("ZPP_QZW=1 ZPP_QWZ_BIT=4 ZPP_LAUNCH_RANK=0 ZPP_QWZ=1");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(Count(run.output, "ZPP WARN"), 2u) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ZPP WARN ZPP_QZW is not a variable zpp knows: it is ignored "
                                    "(did you mean ZPP_QWZ?)"));
  EXPECT_THAT(run.output, HasSubstr("ZPP WARN ZPP_QWZ_BIT is not a variable zpp knows: it is "
                                    "ignored (did you mean ZPP_QWZ_BITS?)"));
  EXPECT_THAT(run.output, HasSubstr("not zpp's (ignored):"));
  EXPECT_THAT(run.output, testing::ContainsRegex("ZPP_QWZ_BIT +did you mean ZPP_QWZ_BITS\\?"));
  EXPECT_THAT(run.output, Not(HasSubstr("ZPP_LAUNCH_RANK is not")));
}

// Issue 29, item 9: an empty value is unset (the default), not "set".
TEST(EnvProcessTest, EmptyValueShowsAsDefault) {
  const zpp::test::CommandRun run = RunZppEnv("ZPP_QWZ= ZPP_HPZ=1");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, testing::ContainsRegex("ZPP_QWZ +0 +default"));
  EXPECT_THAT(run.output, testing::ContainsRegex("ZPP_HPZ +1 +set"));
  EXPECT_THAT(run.output, Not(HasSubstr("ZPP WARN")));
}

// Issue 29, item 4: a process that only has zpp loaded and never uses it (torchrun's agent, a
// shell, a pyenv shim) says nothing, not even at exit, and leaves no debug file.
TEST(EnvProcessTest, ALoadedButUnusedZppIsSilentAndLeavesNoDebugFile) {
  // A folder of its own: a file some earlier process left in TempDir (a mutant run) is not this
  // run's.
  std::string folder = testing::TempDir() + "zpp_quiet_XXXXXX";
  ASSERT_NE(mkdtemp(folder.data()), nullptr);
  const std::string file = folder + "/zpp_quiet_debug_%p.log";
  const zpp::test::CommandRun run = zpp::test::RunCommand(
      std::string("env -i LD_PRELOAD=") + ZPP_LIBRARY +
      " ZPP_QWZ_BITS=5 ZPP_QZW=1 ZPP_STATS=1 ZPP_DEBUG=INFO ZPP_DEBUG_FILE=" + file + " /bin/true");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output, "");
  const zpp::test::CommandRun files =
      zpp::test::RunCommand("ls " + folder + " | grep -c zpp_quiet_debug_");
  EXPECT_EQ(files.output, "0\n");
  zpp::test::RunCommand("rm -rf " + folder);
}

// The banner at the first use, as NCCL prints its own: version, commit, and each setting with
// its source.
TEST(EnvProcessTest, TheFirstUseShowsTheBannerWithEachSettingsSource) {
  const zpp::test::CommandRun run = RunZppEnv(
      "ZPP_DEBUG=INFO ZPP_QWZ=1 ZPP_HPZ=1 ZPP_QWZ_BITS=5 "
      "ZPP_RUN_SETTINGS='ZPP_HPZ=preset zero++;ZPP_QGZ=flag'");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(Count(run.output, "ZPP INFO zpp 0.1.0 (built from commit "), 1u) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ZPP INFO   ZPP_QWZ=1 (environment)"));
  EXPECT_THAT(run.output, HasSubstr("ZPP INFO   ZPP_HPZ=1 (zpp-run: preset zero++)"));
  EXPECT_THAT(run.output, HasSubstr("ZPP INFO   ZPP_QWZ_BITS=8 (rejected, default used)"));
  EXPECT_THAT(run.output, HasSubstr("ZPP INFO   ZPP_BLOCK=256 (default)"));
  EXPECT_EQ(Count(run.output, "ZPP WARN"), 1u) << run.output;
}

}  // namespace
