// A ZeRO-3 training step replayed on the simulated cluster: forward all-gathers (layer order),
// backward all-gathers (reverse order), gradient reduce-scatters, the weights changed after
// every step and the step epoch advanced (or not, to test misuse). Used by zpp-bench's step
// mode, zpp-step-volumes (the README's table) and the hpZ tests.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"
#include "sim/cluster_layout.h"

namespace zpp::step {

enum class InputBuffers {
  kPerLayer,          // each layer's shard in its own buffer (FSDP1, ZeRO-3)
  kShared,            // one input buffer reused for every layer (FSDP2's all-gather input)
  kSharedOnRankZero,  // rank 0 shares, the others do not: pointers differ across ranks
};

struct TrainingSpec {
  sim::ClusterLayout layout;
  plan::Settings settings;
  std::vector<size_t> layer_counts;  // elements of each layer's shard, per rank
  ncclDataType_t dtype = ncclBfloat16;
  int steps = 5;
  int advance_epoch_steps = 1 << 30;  // advance the epoch after this many steps only
  InputBuffers buffers = InputBuffers::kPerLayer;
  int tamper_rank = -1;  // this rank changes its shard between forward and backward...
  int tamper_step = -1;  // ...in this step
  uint64_t hpz_max_bytes = uint64_t{1} << 40;
};

struct TrainingResult {
  std::vector<double> off_node_bytes_per_step;  // rank 0's, per step
  double plain_gather_bytes = 0;  // rank 0's off-node bytes for one plain gather of the model
  std::vector<double> cluster_off_node_bytes_per_step;  // all ranks together, per step
  double cluster_plain_gather_bytes = 0;                // all ranks, one plain gather
  double weight_rel_l2 = 0;        // gathered weights against the exact ones (all steps)
  double gradient_rel_l2 = 0;      // reduce-scattered gradients against fp64 sums
  uint64_t hits = 0;               // over all ranks
  uint64_t verify_failures = 0;    // reported in the stats, all ranks
  int backward_mismatches = 0;     // backward outputs not bitwise the forward ones (non-NaN)
  int nan_outputs = 0;             // all-gather outputs holding NaN
  int failures = 0;                // non-success results
  uint64_t engine_host_syncs = 0;  // host waits zpp made, all ranks (hpZ: one per epoch)
};

TrainingResult RunTraining(const TrainingSpec& spec);

// Off-node bytes per step from `first_steady_step` on (hpZ reuse is agreed from step 2), in
// units of one plain all-gather of the whole model: 3.0 for plain ZeRO-3. Cluster-wide when
// `cluster`, else rank 0's. 0 when there are no steady steps.
double SteadyRelativeVolume(const TrainingResult& result, bool cluster, int first_steady_step = 2);
// The cluster's off-node bytes per steady step (same steps as above).
double SteadyClusterBytesPerStep(const TrainingResult& result, int first_steady_step = 2);

}  // namespace zpp::step
