#include "log/log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"

namespace zpp::log {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetSinkForTesting([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override {
    SetSinkForTesting(nullptr);
    Configure(Settings{});
  }
  void Set(Level level, uint32_t mask) {
    Settings settings;
    settings.level = level;
    settings.subsys_mask = mask;
    Configure(settings);
  }
  std::vector<std::string> lines_;
};

int g_formatted = 0;
// An argument whose evaluation is counted: a gated-off line must not evaluate or format it.
int Counted() {
  ++g_formatted;
  return 42;
}

TEST_F(LogTest, LineAppearsOnlyAtOrAboveItsLevel) {
  const Level levels[] = {Level::kNone, Level::kWarn, Level::kInfo, Level::kTrace};
  for (Level configured : levels) {
    lines_.clear();
    Set(configured, kAll);
    ZPP_WARN("w");
    ZPP_INFO(kInit, "i");
    ZPP_TRACE(kInit, "t");
    const size_t expected = static_cast<size_t>(configured);  // NONE 0, WARN 1, INFO 2, TRACE 3
    EXPECT_EQ(lines_.size(), expected) << "at level " << LevelName(configured);
  }
}

TEST_F(LogTest, LineAppearsOnlyForEnabledSubsystems) {
  Set(Level::kTrace, kTopo | kFence);
  ZPP_INFO(kTopo, "topo");
  ZPP_INFO(kPlan, "plan");
  ZPP_TRACE(kFence, "fence");
  ZPP_TRACE(kCodec, "codec");
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_THAT(lines_[0], HasSubstr("topo"));
  EXPECT_THAT(lines_[1], HasSubstr("fence"));
}

TEST_F(LogTest, WarnIgnoresSubsystemMask) {
  Set(Level::kWarn, 0);
  ZPP_WARN("always");
  EXPECT_EQ(lines_.size(), 1u);
}

TEST_F(LogTest, DisabledLineDoesNoFormatting) {
  Set(Level::kWarn, kAll);
  g_formatted = 0;
  for (int i = 0; i < 1000; ++i) ZPP_INFO(kInit, "value %d", Counted());
  Set(Level::kTrace, kInit);
  ZPP_INFO(kFence, "value %d", Counted());
  EXPECT_EQ(g_formatted, 0);
  EXPECT_TRUE(lines_.empty());
  ZPP_INFO(kInit, "value %d", Counted());
  EXPECT_EQ(g_formatted, 1);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_THAT(lines_[0], HasSubstr("value 42"));
}

TEST_F(LogTest, InfoLineHasNcclFormat) {
  Set(Level::kInfo, kAll);
  ZPP_INFO(kInit, "hello %s", "world");
  ASSERT_EQ(lines_.size(), 1u);
  // host:pid:tid [rank] ZPP INFO message
  EXPECT_THAT(lines_[0], MatchesRegex("[^: ]+:[0-9]+:[0-9]+ \\[-\\] ZPP INFO hello world\n"));
  EXPECT_THAT(lines_[0], HasSubstr(":" + std::to_string(getpid()) + ":"));
}

TEST_F(LogTest, WarnLineCarriesFileAndLineAndRank) {
  Set(Level::kWarn, kAll);
  {
    ScopedRank rank(5);
    ZPP_WARN("bad %d", 7);
  }
  ZPP_WARN("no rank");
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_THAT(lines_[0],
              MatchesRegex("[^: ]+:[0-9]+:[0-9]+ \\[5\\] tests/unit/log_test.cc:[0-9]+ ZPP WARN "
                           "bad 7\n"));
  EXPECT_THAT(lines_[1], HasSubstr("[-]"));
}

TEST(LogFileTest, FilePatternExpandsHostAndPid) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string short_host(host);
  short_host = short_host.substr(0, short_host.find('.'));
  EXPECT_EQ(ExpandFilePattern("/tmp/zpp.%h.%p.log"),
            "/tmp/zpp." + short_host + "." + std::to_string(getpid()) + ".log");
  EXPECT_EQ(ExpandFilePattern("100%%"), "100%");
  EXPECT_EQ(ExpandFilePattern("trailing%"), "trailing%");
}

TEST(LogFileTest, LinesGoToDebugFile) {
  const std::string path = ::testing::TempDir() + "zpp_log_test.%p.log";
  Settings settings;
  settings.level = Level::kInfo;
  settings.file_pattern = path;
  Configure(settings);
  ZPP_INFO(kInit, "to the file");
  Configure(Settings{});  // closes the file
  std::ifstream in(ExpandFilePattern(path));
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_THAT(content.str(), HasSubstr("ZPP INFO to the file"));
  std::remove(ExpandFilePattern(path).c_str());
}

TEST(LogFileTest, UnopenableFileFallsBackToStderrWithWarn) {
  std::vector<std::string> lines;
  SetSinkForTesting([&](std::string_view line) { lines.emplace_back(line); });
  Settings settings;
  settings.file_pattern = "/nonexistent-dir/zpp.log";
  Configure(settings);
  ZPP_WARN("the first line");
  SetSinkForTesting(nullptr);
  Configure(Settings{});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("ZPP_DEBUG_FILE: cannot open /nonexistent-dir/zpp.log"));
  EXPECT_THAT(lines[1], HasSubstr("the first line"));
}

// Issue 29, item 4: a process that logs nothing leaves no file behind.
TEST(LogFileTest, TheFileIsMadeByTheFirstLine) {
  const std::string path = testing::TempDir() + "zpp_first_line_" + std::to_string(getpid());
  std::remove(path.c_str());
  Settings settings;
  settings.file_pattern = path;
  Configure(settings);
  EXPECT_FALSE(std::ifstream(path).good());
  ZPP_WARN("now there is something to say");
  EXPECT_TRUE(std::ifstream(path).good());
  Configure(Settings{});
  std::remove(path.c_str());
}

TEST(LogSubsysTest, ParsesNcclStyleLists) {
  EXPECT_EQ(ParseSubsysList("ALL"), kAll);
  EXPECT_EQ(ParseSubsysList("init,Topo"), kInit | kTopo);
  EXPECT_EQ(ParseSubsysList("^INIT"), ~static_cast<uint32_t>(kInit));
  EXPECT_EQ(ParseSubsysList("^ALL"), 0u);
  EXPECT_EQ(ParseSubsysList("NET"), std::nullopt);
  EXPECT_EQ(ParseSubsysList(""), std::nullopt);
  EXPECT_EQ(ParseLevel("trace"), Level::kTrace);
  EXPECT_EQ(ParseLevel("VERSION"), std::nullopt);
}

}  // namespace
}  // namespace zpp::log
