// A ZeRO-3 training step replayed on the simulated cluster: per micro-batch, forward
// all-gathers (layer order), backward all-gathers (reverse order) and gradient reduce-scatters;
// the weights changed after every optimizer step and the step epoch advanced (or not, to test
// misuse); the gathers' buffers dedicated or as frameworks allocate them. Used by zpp-bench's step
// mode, zpp-step-volumes (docs/benchmarks.md) and the hpZ tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "sim/cluster_layout.h"

namespace zpp::step {

enum class InputBuffers {
  kDedicated,  // each layer's shard in its own buffer for the whole run (FSDP1, ZeRO-3 flat)
  // What frameworks do: every all-gather's output is a fresh block from a caching-allocator model
  // (caching_allocator.h), and the input is this rank's slice of it (FSDP2's in-place layout).
  kFramework,
};
std::string_view InputBuffersName(InputBuffers buffers);  // "dedicated", "framework"
bool ParseInputBuffers(std::string_view name, InputBuffers* out);

inline constexpr int kAllRanks = -2;

struct TrainingSpec {
  sim::ClusterLayout layout;
  plan::Settings settings;
  std::vector<size_t> layer_counts;  // elements of each layer's shard, per rank
  ncclDataType_t dtype = ncclBfloat16;
  int steps = 5;  // optimizer steps, one step epoch each
  // 0: every step's weights are new. Otherwise an optimizer's updates: each step changes every
  // weight by at most this much from the last step's (a bounded random walk from step 0's).
  float step_update = 0;
  // This rank's reference of the first delta-coded gather (place 0) is damaged before this step:
  // one byte of its copy of the shard of the node after its own (ZPP_QWZ_DELTA).
  int damage_reference_rank = -1;
  int damage_reference_step = -1;
  int micro_batches = 1;              // forward + backward passes per optimizer step
  int advance_epoch_steps = 1 << 30;  // advance the epoch after this many steps only
  InputBuffers buffers = InputBuffers::kDedicated;
  // This rank (or kAllRanks) changes the last element of its layer-0 shard between the forward
  // and the backward of the first micro-batch of this step: weights changed without an advance.
  int tamper_rank = -1;
  int tamper_step = -1;
  // This rank's (or every rank's) shard of the last layer equals its shard of layer 0 (same
  // size needed), as LayerNorm weights do at initialization.
  int twin_rank = -1;
  int twin_step = -1;  // only in this step (-1: every step)
  // Layer 0's shard and the last layer's (same size needed) hold 1.0 in every element on every
  // rank, as bf16 LayerNorm weights do, until this step, from which the last layer's takes its
  // own weights (training moved it) while layer 0's stays constant (-1: neither is constant).
  int constant_until_step = -1;
  // A call sequence that changes at one step: one extra gather of a layer after the forward...
  int extra_gather_step = -1;
  size_t extra_gather_layer = 1;
  // ...and one backward gather left out.
  int missing_gather_step = -1;
  size_t missing_gather_layer = 2;
  // A layer whose backward gather never happens, on every step (FSDP2 leaves a module with
  // reshard_after_forward=False gathered from forward to backward).
  int unsharded_layer = -1;
  // Forward gathers, backward gathers and reduce-scatters each on a stream of their own (FSDP2's
  // all-gather and reduce-scatter streams), instead of one stream for all.
  bool phase_streams = false;
  uint64_t hpz_max_bytes = uint64_t{1} << 40;
  // From after the engine's set-up (Engine::Prepare, as the communicators call it) on, this rank's
  // host-visible allocations fail: nothing on the collective path may need one.
  int host_allocation_fails_rank = -1;
  // ...and this rank's event creations (the fences' events come from set-up too).
  int event_creation_fails_rank = -1;
};

struct TrainingResult {
  std::vector<double> off_node_bytes_per_step;  // rank 0's, per step
  double plain_gather_bytes = 0;  // rank 0's off-node bytes for one plain gather of the model
  std::vector<double> cluster_off_node_bytes_per_step;  // all ranks together, per step
  double cluster_plain_gather_bytes = 0;                // all ranks, one plain gather
  double weight_rel_l2 = 0;             // gathered weights against the exact ones (all steps)
  double gradient_rel_l2 = 0;           // reduce-scattered gradients against fp64 sums
  uint64_t hits = 0;                    // over all ranks
  std::vector<uint64_t> hits_per_step;  // over all ranks
  uint64_t verify_failures = 0;         // reported in the stats, all ranks
  uint64_t delta_calls = 0;             // weight gathers that sent a delta, all ranks
  uint64_t delta_full = 0;              // delta plans' gathers that sent in full, all ranks
  std::vector<double> weight_rel_l2_per_step;  // gathered weights' error, all ranks, per step
  uint64_t hpz_kept_bytes_peak = 0;            // most secondary bytes one rank kept at once
  int backward_mismatches = 0;  // later outputs not bitwise the step's first (non-NaN)
  int nan_outputs = 0;          // all-gather outputs holding NaN
  std::vector<int> nan_outputs_per_rank;
  // Outputs without NaN holding some rank's shard as it was before that rank changed it
  // (lossless plans only: compared with the exact current weights).
  int stale_outputs = 0;
  std::vector<int> stale_outputs_per_rank;
  uint64_t output_digest = 0;         // fingerprint of every rank's all-gather outputs, in order
  bool ranks_gathered_alike = false;  // every rank's outputs, call by call, bitwise the same
  int failures = 0;                   // non-success results
  uint64_t engine_host_syncs = 0;     // host waits zpp made, all ranks (hpZ: one per epoch)
  uint64_t stats_host_waits = 0;      // what zppStats_t::host_waits says of them, all ranks
  // Device accesses to zpp's memory not ordered on the device (sim/stream_order_checker.h).
  size_t stream_order_violations = 0;
  std::string first_stream_order_violation;
  size_t allocator_blocks = 0;  // rank 0's distinct blocks, framework buffers
};

TrainingResult RunTraining(const TrainingSpec& spec);

// Off-node bytes per step from `first_steady_step` on (hpZ reuse is agreed from step 2), in
// units of one plain all-gather of the whole model: 3.0 for plain ZeRO-3. Cluster-wide when
// `cluster`, else rank 0's. 0 when there are no steady steps.
double SteadyRelativeVolume(const TrainingResult& result, bool cluster, int first_steady_step = 2);
// The cluster's off-node bytes per steady step (same steps as above).
double SteadyClusterBytesPerStep(const TrainingResult& result, int first_steady_step = 2);

}  // namespace zpp::step
