// The plugin's NCCL communicators as rows of the stats table, their counters read now.
#pragma once

#include <vector>

#include "plugin/stats_table.h"

namespace zpp::plugin {

std::vector<CommStatsRow> NcclCommRows();

}  // namespace zpp::plugin
