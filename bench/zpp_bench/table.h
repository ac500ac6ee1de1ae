// zpp-bench's text output: nccl-tests' columns (size, count, type, time, algbw, busbw) with the
// operation and mode in front, and zpp's after (bytes per link class, errors, #wrong, plan);
// step mode's table; the one-line-per-configuration summary the demo ends with.
#pragma once

#include <string>

#include "bench/zpp_bench/bench_types.h"
#include "step/step_replay.h"

namespace zpp::bench {

std::string TableHeader();
std::string TableRow(const Row& row);

std::string StepTableHeader();
std::string StepTableRow(const step::StepFigures& figures);

// "zero++   inter-node volume 0.766 of plain's 3.000 per step: 74.5% saved; rel. L2 error
// weights 0.44%, gradients 11.31%"
std::string StepSummaryLine(const step::StepFigures& figures, double plain_relative_volume);

}  // namespace zpp::bench
