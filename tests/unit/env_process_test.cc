// The process configuration end to end: bad values in the real environment of a process give
// exactly one WARN each on stderr, and the process goes on with the defaults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct ProcessRun {
  int status;
  std::string output;
};

ProcessRun RunZppEnv(const std::string& env) {
  const std::string command = "env -i " + env + " " + ZPP_ENV_BINARY + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  return {pclose(pipe), output};
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
  const ProcessRun run = RunZppEnv("ZPP_BLOCK=abc ZPP_QWZ_BITS=3 ZPP_MIN_BYTES=-1 ZPP_QWZ=1");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(Count(run.output, "ZPP WARN"), 3u) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("ZPP WARN ZPP_BLOCK=\"abc\" is not an integer; using the default 256"));
  EXPECT_THAT(run.output, HasSubstr("ZPP WARN ZPP_QWZ_BITS=\"3\" is not 4 or 8; using the "
                                    "default 8"));
  EXPECT_THAT(run.output, HasSubstr("ZPP_MIN_BYTES=\"-1\" is out of range"));
  EXPECT_THAT(run.output, HasSubstr("src/config/config.cc:"));  // WARN lines carry file:line
  EXPECT_THAT(run.output, testing::ContainsRegex("ZPP_QWZ +1 +set"));
  EXPECT_THAT(run.output, testing::ContainsRegex("ZPP_BLOCK +256 +set"));
}

TEST(EnvProcessTest, DebugNoneSilencesWarnings) {
  const ProcessRun run = RunZppEnv("ZPP_DEBUG=NONE ZPP_BLOCK=abc");
  EXPECT_EQ(run.status, 0);
  EXPECT_THAT(run.output, Not(HasSubstr("ZPP WARN")));
}

TEST(EnvProcessTest, BadDebugLevelWarnsAtDefaultLevel) {
  const ProcessRun run = RunZppEnv("ZPP_DEBUG=LOUD");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(Count(run.output, "ZPP WARN"), 1u) << run.output;
  EXPECT_THAT(run.output, HasSubstr("ZPP_DEBUG=\"LOUD\" is not a level"));
}

TEST(EnvProcessTest, CleanEnvironmentIsSilent) {
  const ProcessRun run = RunZppEnv("ZPP_QWZ=1");
  EXPECT_EQ(run.status, 0);
  EXPECT_THAT(run.output, Not(HasSubstr("ZPP WARN")));
}

}  // namespace
