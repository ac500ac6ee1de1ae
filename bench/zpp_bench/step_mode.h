// zpp-bench --step-model: the ZeRO-3 step of each model replayed for each configuration on the
// simulated cluster (src/step), as figures for the table, the JSON and the summary.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "log/check.h"
#include "sim/cluster_layout.h"
#include "step/step_replay.h"

namespace zpp::bench {

struct StepModeOptions {
  std::vector<std::string> models;   // built-in names or files
  std::vector<std::string> configs;  // mode names; "plain" is added first when missing
  sim::ClusterLayout layout;
  plan::Settings base;  // block; min_bytes (0: every unit through its plan)
  int steps = 4;
  uint64_t max_elements = uint64_t{1} << 20;
  step::InputBuffers buffers = step::InputBuffers::kDedicated;
  int micro_batches = 1;
};

Result RunStepMode(const StepModeOptions& options,
                   const std::function<void(const step::StepFigures&)>& on_figures,
                   std::vector<step::StepFigures>* out);

}  // namespace zpp::bench
