// The table ZPP_STATS=1 prints at exit: per communicator and technique, the calls, the input
// bytes, the off-node bytes the planner predicted, the pass-throughs by reason and hpZ's record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zpp/zpp.h"

namespace zpp::plugin {

struct CommStatsRow {
  uint64_t id = 0;  // creation order
  int rank = 0;
  int nranks = 1;
  std::string zpp_state;  // "zpp" or why it passes through
  zppStats_t stats{};
};

std::string FormatStatsTable(const std::vector<CommStatsRow>& rows);

// A zppPath_t as the table and the progress line name it: "pass-through", "qwZ", "hpZ", "qgZ".
const char* PathName(int path);

}  // namespace zpp::plugin
