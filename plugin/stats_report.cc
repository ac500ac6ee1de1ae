// ZPP_STATS=1: the stats table on stderr when the process exits.
#include "plugin/stats_report.h"

#include <cstdio>

#include "config/config.h"
#include "epoch/step_epoch.h"
#include "plugin/comm_registry.h"
#include "plugin/stats_file.h"
#include "plugin/stats_table.h"

namespace zpp::plugin {

std::vector<CommStatsRow> NcclCommRows() {
  std::vector<CommStatsRow> rows;
  for (const auto& state : Comms().All()) {
    CommStatsRow row;
    row.id = state->id;
    row.rank = state->rank;
    row.nranks = state->nranks;
    row.zpp_state = state->Zpp() != nullptr ? "zpp" : state->Unavailable();
    state->stats.Snapshot(&row.stats);
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

struct ExitReport {
  ~ExitReport() {
    const Config& config = GetConfig();
    if (config.stats == 0 && config.stats_dir.empty()) return;
    // A process that made no NCCL communicator (a launcher, a CPU-only rank) has nothing to say.
    const std::vector<CommStatsRow> rows = NcclCommRows();
    if (rows.empty()) return;
    if (!config.stats_dir.empty()) WriteStatsFile(rows, "nccl", config.stats_dir);
    if (config.stats == 0) return;
    const std::string table = FormatStatsTable(rows);
    std::fputs(table.c_str(), stderr);
  }
};
ExitReport exit_report;

}  // namespace
}  // namespace zpp::plugin
