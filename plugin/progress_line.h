// ZPP_PROGRESS=N: every N step epochs, one line of this process's counters for long runs, from
// one process only (rank 0 of its largest communicator), so a job prints one line, not one per
// rank. The plugin prints it at zppStepEpochAdvance, the CPU backend at the step's end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plugin/stats_table.h"

namespace zpp::plugin {

// Whether this process speaks for the job: it is rank 0 of its largest communicator.
bool SpeaksForJob(const std::vector<CommStatsRow>& rows);

// The line (no newline), e.g. "zpp progress: step 100, rank 0/4, 2 communicator(s): 1200 calls,
// 900 through zpp's plans (hpZ 300, qgZ 600), 300 passed through (small 280); off-node bytes
// 12.3 MiB, 0.191 of plain; hpZ 280 hits, 20 misses, 0 verification failures".
std::string FormatProgressLine(uint64_t step, const std::vector<CommStatsRow>& rows);

// True when ZPP_PROGRESS asks for a line at this step epoch.
bool ProgressDue(uint64_t step, uint64_t every);

}  // namespace zpp::plugin
