// The ZPP_STATS table's content, from counters set by hand.
#include "plugin/stats_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace zpp::plugin {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(StatsTableTest, RowsPerTechniqueReasonsAndHpz) {
  CommStatsRow row;
  row.id = 3;
  row.rank = 1;
  row.nranks = 8;
  row.zpp_state = "zpp";
  row.stats.calls[zppPathQwz] = 10;
  row.stats.input_bytes[zppPathQwz] = 4096;
  row.stats.kernel_launches[zppPathQwz] = 20;
  row.stats.collective_launches[zppPathQwz] = 10;
  row.stats.calls[zppPathPassThrough] = 2;
  row.stats.collective_launches[zppPathPassThrough] = 2;
  row.stats.passthrough[zppReasonSmall] = 2;
  row.stats.sent_bytes[zppLinkInterNode] = 1000;
  row.stats.sent_bytes[zppLinkInterRack] = 24;
  row.stats.hpz_hits = 5;
  const std::string table = FormatStatsTable({row});
  EXPECT_THAT(table, HasSubstr("kernels  collectives\n"));
  EXPECT_THAT(table, HasSubstr("    3       1/8 qwZ                   10           4096" +
                               std::string(18, ' ') + "       20           10\n"));
  EXPECT_THAT(table, HasSubstr("1/8 pass-through           2              0" +
                               std::string(18, ' ') + "        0            2\n"));
  EXPECT_THAT(table, HasSubstr("1024  (zpp)"));
  EXPECT_THAT(table, HasSubstr("pass-through reasons: small=2"));
  EXPECT_THAT(table, HasSubstr("hpZ hits 5, misses 0, verify failures 0"));
  EXPECT_THAT(table, Not(HasSubstr("qgZ")));
}

TEST(StatsTableTest, NoHpzLineWithoutHpz) {
  CommStatsRow row;
  row.zpp_state = "one rank: its calls pass through";
  EXPECT_THAT(FormatStatsTable({row}), Not(HasSubstr("hpZ hits")));
  EXPECT_THAT(FormatStatsTable({row}), HasSubstr("(one rank: its calls pass through)"));
}

}  // namespace
}  // namespace zpp::plugin
