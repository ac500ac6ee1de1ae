// libzpp_cpu.so's communicators as the ZPP_STATS=1 table sees them: every connected one, its
// counters read at exit, or at its destruction when it went earlier.
#pragma once

#include <memory>
#include <vector>

#include "cpu_comm/cpu_comm.h"
#include "plugin/stats_table.h"

namespace zpp::cpu {

void RegisterForStatsTable(const std::shared_ptr<CpuComm>& comm);
// Takes the final counters of a communicator about to be destroyed.
void KeepStatsOf(const CpuComm& comm);
// Every registered communicator's row, live ones' counters read now.
std::vector<plugin::CommStatsRow> CpuCommRows();

}  // namespace zpp::cpu
