#include "step/step_replay.h"

#include "step/mode.h"

namespace zpp::step {

namespace {
constexpr int kFirstSteadyStep = 2;
}

Result ReplaySteps(const StepReplaySpec& spec, StepFigures* out) {
  ZPP_CHECK_ARG(spec.steps > kFirstSteadyStep,
                "step mode: %d steps replayed; the volume is measured from step %d on, so at "
                "least %d are needed",
                spec.steps, kFirstSteadyStep, kFirstSteadyStep + 1);
  const ScaledModel scaled =
      ScaleForSim(spec.model, spec.layout.world_size(), spec.max_elements, spec.settings.block);
  TrainingSpec training;
  training.layout = spec.layout;
  training.settings = spec.settings;
  training.layer_counts = scaled.shard_counts;
  training.dtype = spec.dtype;
  training.steps = spec.steps;
  training.buffers = spec.buffers;
  training.micro_batches = spec.micro_batches;
  // Weight deltas code what changed since the last step: with weights new every step (the
  // replay's default) they would code the weights. An optimizer's step instead: each weight moves
  // by up to 1% of the weights' range per step.
  if (spec.settings.qwz_delta) training.step_update = kDeltaReplayUpdate;
  const TrainingResult result = RunTraining(training);
  ZPP_CHECK_ARG(
      result.failures == 0,
      "step mode: %d collectives failed replaying %s with %s (the WARN lines above say why)",
      result.failures, spec.model.name.c_str(), ModeName(spec.settings).c_str());

  StepFigures figures;
  figures.model = spec.model.name;
  figures.config = ModeName(spec.settings);
  figures.inter_node_bytes_per_step = SteadyClusterBytesPerStep(result, kFirstSteadyStep);
  figures.relative_volume = SteadyRelativeVolume(result, /*cluster=*/true, kFirstSteadyStep);
  figures.weight_rel_l2 = result.weight_rel_l2;
  figures.gradient_rel_l2 = result.gradient_rel_l2;
  for (size_t count : scaled.shard_counts) {
    figures.replayed_elements += count * static_cast<uint64_t>(spec.layout.world_size());
  }
  figures.scale_factor = scaled.factor;
  figures.buffers = std::string(InputBuffersName(spec.buffers));
  figures.micro_batches = spec.micro_batches;
  figures.hpz_hits = result.hits;
  figures.hpz_verify_failures = result.verify_failures;
  figures.hpz_hits_per_step = result.hits_per_step;
  figures.output_digest = result.output_digest;
  figures.nan_outputs = result.nan_outputs;
  *out = figures;
  return ncclSuccess;
}

}  // namespace zpp::step
