// zpp-step-volumes: the table of inter-node volume and error per ZeRO-3 step, for each
// configuration, on the simulated 2-node x 4-rank cluster (bf16, 4 units, 5 steps, steady state
// from step 2). Volume is in units of one plain all-gather of the whole model (ZeRO-3: 3.0).
// A measurement, not a test: the assertions on the same replay are in tests/sim/hpz_test.cc and
// tests/bench/. zpp-bench --step-model replays GPT-style layer lists the same way.
#include <cstdio>

#include "CLI/CLI.hpp"
#include "step/mode.h"
#include "step/training_step.h"

namespace {

// The names docs/benchmarks.md uses for the configurations (zpp-bench's JSON uses ModeName).
const char* Label(const std::string& mode) {
  if (mode == "nccl") return "plain NCCL (ZeRO-3)";
  if (mode == "qwz8") return "qwZ int8";
  if (mode == "qwz4") return "qwZ int4";
  if (mode == "hpz") return "hpZ";
  if (mode == "qwz8+hpz") return "qwZ int8 + hpZ";
  if (mode == "qgz8/4") return "qgZ 8/4";
  if (mode == "zero++") return "ZeRO++: qwZ int8 + hpZ + qgZ 8/4";
  if (mode == "qwz8+hpz+qgz8/8") return "qwZ int8 + hpZ + qgZ 8/8";
  if (mode == "qwz4+hpz+qgz4/4") return "qwZ int4 + hpZ + qgZ 4/4";
  return mode.c_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Prints the table of inter-node volume and error per ZeRO-3 step for each "
      "configuration, on the simulated 2-node x 4-rank cluster (bf16, 4 units, 5 steps). Volume "
      "is in units of one plain all-gather of the whole model (ZeRO-3: 3.0). Takes no options."};
  CLI11_PARSE(app, argc, argv);
  std::printf("| configuration | inter-node volume | weight rel. L2 | gradient rel. L2 |\n");
  std::printf("|---|---:|---:|---:|\n");
  int failures = 0;
  for (const std::string& mode : zpp::step::StandardStepModes()) {
    zpp::step::TrainingSpec spec;
    spec.layout = zpp::sim::ClusterLayout::Uniform(2, 4);
    if (zpp::step::ParseMode(mode, &spec.settings) != ncclSuccess) return 1;
    spec.settings.min_bytes = 0;
    spec.layer_counts = {65536, 16384, 65536, 32768};
    spec.steps = 5;
    const zpp::step::TrainingResult result = zpp::step::RunTraining(spec);
    std::printf("| %s | %.3f | %.2f%% | %.2f%% |\n", Label(mode),
                zpp::step::SteadyRelativeVolume(result, /*cluster=*/false),
                100 * result.weight_rel_l2, 100 * result.gradient_rel_l2);
    failures += result.failures;
  }
  return failures == 0 ? 0 : 1;
}
