// Every variable with valid, invalid, empty, blank and out-of-range values. Expected values are
// written out here from the table in docs/configuration.md, not read from the declarations.
#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "config/env_names.h"
#include "config/env_spec.h"

namespace zpp {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

config::ParseResult ParseWith(const std::map<std::string, std::string>& env) {
  return config::ParseEnvironment([&](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

struct Case {
  std::string name;
  std::string value;
  std::string expected;  // ValueText after parsing
  bool warns;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << "=\"" << c.value << "\" -> " << c.expected << (c.warns ? " (WARN)" : "");
}

class ConfigCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConfigCaseTest, GivesDocumentedValueOrDefault) {
  const Case& c = GetParam();
  const config::ParseResult result = ParseWith({{c.name, c.value}});
  EXPECT_EQ(result.config.ValueText(c.name), c.expected);
  if (c.warns) {
    ASSERT_EQ(result.warnings.size(), 1u);
    const std::string& warning = result.warnings[0];
    EXPECT_THAT(warning, HasSubstr(c.name));
    // A rejected value falls back to the default; a list keeps what it named right.
    EXPECT_THAT(warning, AnyOf(HasSubstr("using the default"), HasSubstr("; using ")));
    EXPECT_THAT(warning, HasSubstr(c.expected == "" ? "(unset)" : c.expected));
    // Rejected whole (the default used) or kept in part (a subsystem list): zpp-env tells which.
    const bool whole = warning.find("using the default") != std::string::npos;
    EXPECT_EQ(result.rejected,
              whole ? std::vector<std::string>{c.name} : std::vector<std::string>{});
  } else {
    EXPECT_TRUE(result.warnings.empty()) << result.warnings[0];
  }
}

// Bool variables: ZPP_QWZ, ZPP_HPZ, ZPP_QGZ, ZPP_STATS default 0; ZPP_FENCE defaults to 1.
std::vector<Case> BoolCases(const std::string& name, const std::string& def) {
  return {
      {name, "1", "1", false},     {name, "0", "0", false},
      {name, "true", "1", false},  {name, "FALSE", "0", false},
      {name, "Yes", "1", false},   {name, "off", "0", false},
      {name, " on\t", "1", false}, {name, "", def, false},
      {name, "   ", def, false},   {name, "2", def, true},
      {name, "-1", def, true},     {name, "enable", def, true},
      {name, "1 0", def, true},    {name, "99999999999999999999", def, true},
  };
}

// narrow_ok: the variable's range takes 2 and 3 (ZPP_QGZ_BITS_INTER, ZPP_QWZ_DELTA_BITS); the
// others reject them.
std::vector<Case> BitsCases(const std::string& name, const std::string& def, bool narrow_ok) {
  return {
      {name, "2", narrow_ok ? "2" : def, !narrow_ok},
      {name, "3", narrow_ok ? "3" : def, !narrow_ok},
      {name, "4", "4", false},
      {name, "8", "8", false},
      {name, " 4 ", "4", false},
      {name, "+8", "8", false},
      {name, "", def, false},
      {name, "\t", def, false},
      {name, "16", def, true},
      {name, "5", def, true},
      {name, "6", def, true},
      {name, "7", def, true},
      {name, "0", def, true},
      {name, "-4", def, true},
      {name, "eight", def, true},
      {name, "8bits", def, true},
      {name, "4.0", def, true},
      {name, "18446744073709551616", def, true},
  };
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  auto add = [&](std::vector<Case> more) { cases.insert(cases.end(), more.begin(), more.end()); };
  add(BoolCases("ZPP_QWZ", "0"));
  add(BoolCases("ZPP_HPZ", "0"));
  add(BoolCases("ZPP_QWZ_ROTATE", "0"));
  add(BoolCases("ZPP_QGZ", "0"));
  add(BoolCases("ZPP_STATS", "0"));
  add(BoolCases("ZPP_FENCE", "1"));
  add(BoolCases("ZPP_LOSSY_ONE_NODE", "0"));
  add(BitsCases("ZPP_QWZ_BITS", "8", false));
  add(BitsCases("ZPP_QGZ_BITS_INTRA", "8", false));
  add(BitsCases("ZPP_QGZ_BITS_INTER", "4", true));
  add({
      {"ZPP_BLOCK", "32", "32", false},
      {"ZPP_BLOCK", "4096", "4096", false},
      {"ZPP_BLOCK", " 512 ", "512", false},
      {"ZPP_BLOCK", "", "256", false},
      {"ZPP_BLOCK", "  ", "256", false},
      {"ZPP_BLOCK", "abc", "256", true},
      {"ZPP_BLOCK", "100", "256", true},   // not a power of two
      {"ZPP_BLOCK", "16", "256", true},    // below 32
      {"ZPP_BLOCK", "8192", "256", true},  // above 4096
      {"ZPP_BLOCK", "-256", "256", true},
      {"ZPP_BLOCK", "9223372036854775808", "256", true},  // overflows int64
      {"ZPP_BLOCK", "0x100", "256", true},
  });
  add({
      {"ZPP_MIN_BYTES", "0", "0", false},
      {"ZPP_MIN_BYTES", "4096", "4096", false},
      {"ZPP_TUNE", "auto", "auto", false},
      {"ZPP_TUNE", "AUTO", "auto", false},
      {"ZPP_TUNE", "off", "off", false},
      {"ZPP_TUNE", "", "off", false},
      {"ZPP_TUNE", "1", "off", true},
      {"ZPP_TUNE", "yes", "off", true},
      {"ZPP_MIN_BYTES", "64K", "65536", false},
      {"ZPP_MIN_BYTES", "2m", "2097152", false},
      {"ZPP_MIN_BYTES", "1G", "1073741824", false},
      {"ZPP_MIN_BYTES", "1024G", "1099511627776", false},
      {"ZPP_MIN_BYTES", "", "1048576", false},
      {"ZPP_MIN_BYTES", " \n", "1048576", false},
      {"ZPP_MIN_BYTES", "-1", "1048576", true},
      {"ZPP_MIN_BYTES", "1025G", "1048576", true},         // above 1 TiB
      {"ZPP_MIN_BYTES", "8589934592G", "1048576", true},   // overflows when scaled
      {"ZPP_MIN_BYTES", "17179869184G", "1048576", true},  // 2^64: would wrap to 0
      {"ZPP_MIN_BYTES", "99999999999999999999", "1048576", true},
      {"ZPP_MIN_BYTES", "K", "1048576", true},
      {"ZPP_MIN_BYTES", "12KB", "1048576", true},
      {"ZPP_MIN_BYTES", "1.5M", "1048576", true},
  });
  add({
      {"ZPP_HPZ_MAX_MB", "0", "0", false},
      {"ZPP_HPZ_MAX_MB", "512", "512", false},
      {"ZPP_HPZ_MAX_MB", "", "1024", false},
      {"ZPP_HPZ_MAX_MB", " ", "1024", false},
      {"ZPP_HPZ_MAX_MB", "-1", "1024", true},
      {"ZPP_HPZ_MAX_MB", "16777217", "1024", true},
      {"ZPP_HPZ_MAX_MB", "1G", "1024", true},
  });
  add({
      {"ZPP_EF_MAX_MB", "0", "0", false},
      {"ZPP_EF_MAX_MB", "64", "64", false},
      {"ZPP_EF_MAX_MB", "", "256", false},
      {"ZPP_EF_MAX_MB", "-1", "256", true},
      {"ZPP_EF_MAX_MB", "16777217", "256", true},
      {"ZPP_EF_MAX_MB", "1G", "256", true},
  });
  add(BoolCases("ZPP_QGZ_EF", "0"));
  add(BoolCases("ZPP_QAR", "0"));
  add(BoolCases("ZPP_QAR_EF", "0"));
  add(BitsCases("ZPP_QAR_BITS", "8", false));
  add(BoolCases("ZPP_QWZ_DELTA", "0"));
  add(BitsCases("ZPP_QWZ_DELTA_BITS", "4", true));
  add({
      {"ZPP_QWZ_DELTA_REFRESH", "0", "0", false},
      {"ZPP_QWZ_DELTA_REFRESH", "10", "10", false},
      {"ZPP_QWZ_DELTA_REFRESH", "", "100", false},
      {"ZPP_QWZ_DELTA_REFRESH", "-1", "100", true},
      {"ZPP_QWZ_DELTA_REFRESH", "1000000001", "100", true},
      {"ZPP_QWZ_DELTA_REFRESH", "ten", "100", true},
  });
  add({
      {"ZPP_POOL_MB", "0", "0", false},
      {"ZPP_POOL_MB", "512", "512", false},
      {"ZPP_POOL_MB", "", "2048", false},
      {"ZPP_POOL_MB", "-1", "2048", true},
      {"ZPP_POOL_MB", "16777217", "2048", true},
      {"ZPP_POOL_MB", "2G", "2048", true},
  });
  add({
      {"ZPP_LOCAL_SIZE", "0", "0", false},
      {"ZPP_LOCAL_SIZE", "8", "8", false},
      {"ZPP_LOCAL_SIZE", "1048576", "1048576", false},
      {"ZPP_LOCAL_SIZE", "", "0", false},
      {"ZPP_LOCAL_SIZE", " ", "0", false},
      {"ZPP_LOCAL_SIZE", "-2", "0", true},
      {"ZPP_LOCAL_SIZE", "1048577", "0", true},
      {"ZPP_LOCAL_SIZE", "four", "0", true},
      {"ZPP_LOCAL_SIZE", "-9223372036854775809", "0", true},
  });
  add({
      {"ZPP_NODE_ID", "-1", "-1", false},
      {"ZPP_NODE_ID", "0", "0", false},
      {"ZPP_NODE_ID", "2147483647", "2147483647", false},
      {"ZPP_NODE_ID", "", "-1", false},
      {"ZPP_NODE_ID", "\t", "-1", false},
      {"ZPP_NODE_ID", "-2", "-1", true},
      {"ZPP_NODE_ID", "2147483648", "-1", true},
      {"ZPP_NODE_ID", "node3", "-1", true},
  });
  add({
      {"ZPP_RACK_ID", "rack-07", "rack-07", false},
      {"ZPP_RACK_ID", "r1.a:b_c", "r1.a:b_c", false},
      {"ZPP_RACK_ID", " r2 ", "r2", false},
      {"ZPP_RACK_ID", "", "", false},
      {"ZPP_RACK_ID", "   ", "", false},
      {"ZPP_RACK_ID", "rack 7", "", true},
      {"ZPP_RACK_ID", "rack/7", "", true},
      {"ZPP_RACK_ID", std::string(65, 'r'), "", true},
  });
  for (const std::string name :
       {"ZPP_TOPO_FILE", "ZPP_NCCL_LIBRARY", "ZPP_DEBUG_FILE", "ZPP_STATS_DIR"}) {
    add({
        {name, "/etc/zpp/racks.txt", "/etc/zpp/racks.txt", false},
        {name, " relative/path ", "relative/path", false},
        {name, "", "", false},
        {name, "  ", "", false},
        {name, std::string(4095, 'p'), std::string(4095, 'p'), false},  // the longest
        {name, std::string(4096, 'p'), "", true},
    });
  }
  add({
      {"ZPP_DEBUG", "NONE", "NONE", false},
      {"ZPP_DEBUG", "warn", "WARN", false},
      {"ZPP_DEBUG", "Info", "INFO", false},
      {"ZPP_DEBUG", " TRACE ", "TRACE", false},
      {"ZPP_DEBUG", "", "WARN", false},
      {"ZPP_DEBUG", " ", "WARN", false},
      {"ZPP_DEBUG", "VERBOSE", "WARN", true},
      {"ZPP_DEBUG", "2", "WARN", true},
  });
  add({
      {"ZPP_PROGRESS", "", "0", false},
      {"ZPP_PROGRESS", "0", "0", false},
      {"ZPP_PROGRESS", " 100 ", "100", false},
      {"ZPP_PROGRESS", "1000000000", "1000000000", false},
      {"ZPP_PROGRESS", "1000000001", "0", true},
      {"ZPP_PROGRESS", "-1", "0", true},
      {"ZPP_PROGRESS", "10 steps", "0", true},
  });
  add({
      {"ZPP_TIMEOUT", "1", "1", false},
      {"ZPP_TIMEOUT", "30", "30", false},
      {"ZPP_TIMEOUT", " 86400 ", "86400", false},
      {"ZPP_TIMEOUT", "", "300", false},
      {"ZPP_TIMEOUT", " ", "300", false},
      {"ZPP_TIMEOUT", "0", "300", true},  // a wait that never waits: every collective fails
      {"ZPP_TIMEOUT", "-5", "300", true},
      {"ZPP_TIMEOUT", "86401", "300", true},
      {"ZPP_TIMEOUT", "1.5", "300", true},
      {"ZPP_TIMEOUT", "5m", "300", true},
  });
  add({
      {"ZPP_DEBUG_SUBSYS", "ALL", "ALL", false},
      {"ZPP_DEBUG_SUBSYS", "init,topo", "INIT,TOPO", false},
      {"ZPP_DEBUG_SUBSYS", " FENCE , PLAN ", "PLAN,FENCE", false},
      {"ZPP_DEBUG_SUBSYS", "^FENCE", "INIT,ENV,TOPO,PLAN,EXEC,CODEC,PLUGIN,STATS,BENCH,TUNE",
       false},
      {"ZPP_DEBUG_SUBSYS", "", "ALL", false},
      {"ZPP_DEBUG_SUBSYS", "  ", "ALL", false},
      // Issue 29, item 9: an unknown name is warned and the known ones are kept.
      {"ZPP_DEBUG_SUBSYS", "INIT,NET", "INIT", true},
      {"ZPP_DEBUG_SUBSYS", "INIT,,TOPO", "INIT,TOPO", true},
      {"ZPP_DEBUG_SUBSYS", "NET", "ALL", true},  // no name known: the default
      {"ZPP_DEBUG_SUBSYS", "^", "ALL", true},
  });
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryVariable, ConfigCaseTest, ::testing::ValuesIn(AllCases()));

TEST(ConfigTest, EveryDeclaredVariableHasCases) {
  std::set<std::string> covered;
  for (const Case& c : AllCases()) covered.insert(c.name);
  for (const config::EnvSpec& spec : config::AllEnvSpecs()) {
    EXPECT_TRUE(covered.count(std::string(spec.name))) << spec.name << " has no test cases";
  }
}

TEST(ConfigTest, UnsetEnvironmentGivesDocumentedDefaults) {
  const config::ParseResult result = ParseWith({});
  EXPECT_TRUE(result.warnings.empty());
  const Config& c = result.config;
  EXPECT_EQ(c.qwz, 0);
  EXPECT_EQ(c.qwz_bits, 8);
  EXPECT_EQ(c.hpz, 0);
  EXPECT_EQ(c.qgz, 0);
  EXPECT_EQ(c.qgz_bits_intra, 8);
  EXPECT_EQ(c.qgz_bits_inter, 4);
  EXPECT_EQ(c.block, 256);
  EXPECT_EQ(c.min_bytes, 1 << 20);
  EXPECT_EQ(c.fence, 1);
  EXPECT_EQ(c.hpz_max_mb, 1024);
  EXPECT_EQ(c.pool_mb, 2048);
  EXPECT_EQ(c.local_size, 0);
  EXPECT_EQ(c.node_id, -1);
  EXPECT_EQ(c.rack_id, "");
  EXPECT_EQ(c.stats, 0);
  EXPECT_EQ(c.timeout, 300);
  EXPECT_EQ(c.debug, 1);  // WARN
  EXPECT_EQ(c.debug_subsys, -1);
}

TEST(ConfigTest, SeveralBadValuesGiveOneWarningEach) {
  const config::ParseResult result = ParseWith(
      {{"ZPP_BLOCK", "abc"}, {"ZPP_QWZ_BITS", "3"}, {"ZPP_MIN_BYTES", "-1"}, {"ZPP_QWZ", "1"}});
  EXPECT_EQ(result.warnings.size(), 3u);
  EXPECT_EQ(result.config.qwz, 1);
  EXPECT_EQ(result.config.block, 256);
  EXPECT_EQ(result.config.qwz_bits, 8);
  EXPECT_EQ(result.config.min_bytes, 1 << 20);
}

TEST(ConfigTest, WarningNamesValueAndEscapesControlBytes) {
  const config::ParseResult result = ParseWith({{"ZPP_BLOCK", std::string("a\x01\"b", 4)}});
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_EQ(result.warnings[0],
            "ZPP_BLOCK=\"a\\x01\\x22b\" is not an integer; using the default 256");
}

TEST(ConfigTest, LongValueIsShortenedInWarning) {
  const config::ParseResult result = ParseWith({{"ZPP_BLOCK", std::string(1000, '9')}});
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_LT(result.warnings[0].size(), 200u);
  EXPECT_THAT(result.warnings[0], HasSubstr("..."));
}

}  // namespace
}  // namespace zpp

namespace zpp::config {
namespace {

// Issue 29, item 3: a misspelt variable is named, with the variable it most likely meant.
TEST(EnvNamesTest, TyposGetTheClosestKnownName) {
  EXPECT_EQ(ClosestKnownName("ZPP_QZW"), "ZPP_QWZ");            // a transposition
  EXPECT_EQ(ClosestKnownName("ZPP_WQZ_BTIS"), "ZPP_QWZ_BITS");  // two: 2 edits, not 4
  EXPECT_EQ(ClosestKnownName("ZPP_QWZ_BIT"), "ZPP_QWZ_BITS");   // a letter short
  EXPECT_EQ(ClosestKnownName("ZPP_HPZ_MAX_MiB"), "ZPP_HPZ_MAX_MB");
  EXPECT_EQ(ClosestKnownName("ZPP_LAUNCH_RANKS"), "ZPP_LAUNCH_RANK");
  EXPECT_EQ(ClosestKnownName("ZPP_SOMETHING_ELSE"), "");  // nothing close: no guess
}

TEST(EnvNamesTest, OnlyNamesZppDoesNotKnowAreWarned) {
  const std::vector<std::string> warnings = UnknownNameWarnings(
      {"ZPP_QWZ", "ZPP_LAUNCH_RANK", "ZPP_RESULTS", "ZPP_QZW", "ZPP_SOMETHING_ELSE", "PATH"});
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "ZPP_QZW is not a variable zpp knows: it is ignored (did you mean "
            "ZPP_QWZ?)");
  EXPECT_EQ(warnings[1],
            "ZPP_SOMETHING_ELSE is not a variable zpp knows: it is ignored "
            "(zpp-env lists them)");
  for (const EnvSpec& spec : AllEnvSpecs()) EXPECT_TRUE(IsKnownName(spec.name)) << spec.name;
  for (const OtherVariable& other : OtherVariables()) EXPECT_TRUE(IsKnownName(other.name));
}

// The ZPP_* names a shell script reads (`$ZPP_X`, `${ZPP_X...}`) or sets (`ZPP_X=`). Not
// std::regex: GCC 12 warns inside it at -O2 with the sanitizers (maybe-uninitialized), and
// warnings are errors in `make asan`.
std::vector<std::string> ScriptVariables(const std::string& text) {
  const auto in_name = [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isupper(u) || std::isdigit(u) || c == '_';
  };
  const auto in_word = [&](char c) {
    return in_name(c) || std::islower(static_cast<unsigned char>(c));
  };
  std::vector<std::string> names;
  for (size_t at = text.find("ZPP_"); at != std::string::npos; at = text.find("ZPP_", at + 1)) {
    if (at > 0 && in_word(text[at - 1])) continue;
    size_t end = at;
    while (end < text.size() && in_name(text[end])) ++end;
    size_t last = end;
    while (last > at && text[last - 1] == '_') --last;  // a name ends in a letter or digit
    const bool read =
        (at >= 1 && text[at - 1] == '$') || (at >= 2 && text[at - 2] == '$' && text[at - 1] == '{');
    const bool set = last == end && end < text.size() && text[end] == '=';
    if (read || set) names.push_back(text.substr(at, last - at));
  }
  return names;
}

// The GPU scripts pass their own ZPP_* settings to the ranks' environment: one zpp does not
// know is warned about as a typo in every rank's log (ZPP_BENCH_MPS was, on the H100 run of
// 2026-11-27).
TEST(EnvNamesTest, EveryVariableTheScriptsUseIsKnown) {
  EXPECT_EQ(ScriptVariables("a=${ZPP_A:-1} ZPP_B=2 $ZPP_C ZPP_D is text, X_ZPP_E=1 ZPP_F_=3"),
            (std::vector<std::string>{"ZPP_A", "ZPP_B", "ZPP_C"}));
  size_t scripts = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(ZPP_SOURCE_DIR) + "/tools")) {
    if (entry.path().extension() != ".sh") continue;
    ++scripts;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const std::string& name : ScriptVariables(text)) {
      EXPECT_TRUE(IsKnownName(name)) << entry.path().filename() << " uses " << name;
    }
  }
  EXPECT_GT(scripts, 3u);  // the folder was found
}

}  // namespace
}  // namespace zpp::config
