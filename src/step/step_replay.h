// Step mode's figures for one model and one configuration: the ZeRO-3 step replayed on the
// simulated cluster (training_step.h), summarized as zpp-bench and zpp-step-volumes report it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "log/check.h"
#include "plan/plan.h"
#include "sim/cluster_layout.h"
#include "step/model_shapes.h"
#include "step/training_step.h"

namespace zpp::step {

// The replay's weights lie in [-1, 1]; with qwZ deltas each step moves them by up to this much.
inline constexpr float kDeltaReplayUpdate = 1e-2f;

struct StepReplaySpec {
  Model model;
  sim::ClusterLayout layout;
  plan::Settings settings;  // min_bytes included: 0 replays every unit through its plan
  ncclDataType_t dtype = ncclBfloat16;
  int steps = 4;  // the volume is the mean over steps 2.. (hpZ reuse is agreed from step 2)
  uint64_t max_elements = uint64_t{1} << 20;  // the replayed model's size (ScaleForSim)
  InputBuffers buffers = InputBuffers::kDedicated;
  int micro_batches = 1;  // forward + backward passes per optimizer step (one step epoch)
};

struct StepFigures {
  std::string model;
  std::string config;  // ModeName of the settings: "plain", "zero++", "qwz8+hpz", ...
  double inter_node_bytes_per_step = 0;  // off-node bytes of all ranks, replayed model
  // Per optimizer step, in plain all-gathers of the model: 3.0 for ZeRO-3 (3.0 x micro-batches).
  double relative_volume = 0;
  double weight_rel_l2 = 0;           // gathered weights against the exact ones
  double gradient_rel_l2 = 0;         // reduce-scattered gradients against fp64 sums
  uint64_t replayed_elements = 0;     // the replayed model's parameters
  double scale_factor = 1;            // full-size parameters / replayed parameters
  std::string buffers = "dedicated";  // InputBuffersName
  int micro_batches = 1;
  uint64_t hpz_hits = 0;             // all ranks, all steps
  uint64_t hpz_verify_failures = 0;  // all ranks, all steps
  std::vector<uint64_t> hpz_hits_per_step;
  uint64_t output_digest = 0;  // every all-gather output of every rank (TrainingResult)
  int nan_outputs = 0;
};

// Fails when the replay reported a failed collective or has no steady step.
Result ReplaySteps(const StepReplaySpec& spec, StepFigures* out);

}  // namespace zpp::step
