// zpp-step-volumes: the README's table of inter-node volume and error per ZeRO-3 step, for each
// configuration, on the simulated 2-node x 4-rank cluster (bf16, 4 layers, 5 steps, steady state
// from step 2). Volume is in units of one plain all-gather of the whole model (ZeRO-3: 3.0).
// A measurement, not a test: the assertions on the same replay are in hpz_test.cc. It moves to
// zpp-bench's step mode when that lands.
#include <cstdio>

#include "training_step.h"

namespace {

struct Configuration {
  const char* name;
  bool qwz;
  int qwz_bits;
  bool hpz;
  bool qgz;
  int qgz_bits_intra;
  int qgz_bits_inter;
};

}  // namespace

int main() {
  using zpp::test::RunTraining;
  using zpp::test::TrainingSpec;
  const Configuration configurations[] = {
      {"plain NCCL (ZeRO-3)", false, 8, false, false, 8, 4},
      {"qwZ int8", true, 8, false, false, 8, 4},
      {"qwZ int4", true, 4, false, false, 8, 4},
      {"hpZ", false, 8, true, false, 8, 4},
      {"qwZ int8 + hpZ", true, 8, true, false, 8, 4},
      {"qgZ 8/4", false, 8, false, true, 8, 4},
      {"ZeRO++: qwZ int8 + hpZ + qgZ 8/4", true, 8, true, true, 8, 4},
      {"qwZ int8 + hpZ + qgZ 8/8", true, 8, true, true, 8, 8},
      {"qwZ int4 + hpZ + qgZ 4/4", true, 4, true, true, 4, 4},
  };
  std::printf("| configuration | inter-node volume | weight rel. L2 | gradient rel. L2 |\n");
  std::printf("|---|---:|---:|---:|\n");
  int failures = 0;
  for (const Configuration& c : configurations) {
    TrainingSpec spec;
    spec.layout = zpp::sim::ClusterLayout::Uniform(2, 4);
    spec.settings.qwz = c.qwz;
    spec.settings.qwz_bits = c.qwz_bits;
    spec.settings.hpz = c.hpz;
    spec.settings.qgz = c.qgz;
    spec.settings.qgz_bits_intra = c.qgz_bits_intra;
    spec.settings.qgz_bits_inter = c.qgz_bits_inter;
    spec.settings.min_bytes = 0;
    spec.layer_counts = {65536, 16384, 65536, 32768};
    spec.steps = 5;
    const zpp::test::TrainingResult result = RunTraining(spec);
    double steady = 0;
    for (int step = 2; step < spec.steps; ++step) steady += result.off_node_bytes_per_step[step];
    steady /= spec.steps - 2;
    std::printf("| %s | %.3f | %.2f%% | %.2f%% |\n", c.name, steady / result.plain_gather_bytes,
                100 * result.weight_rel_l2, 100 * result.gradient_rel_l2);
    failures += result.failures;
  }
  return failures == 0 ? 0 : 1;
}
