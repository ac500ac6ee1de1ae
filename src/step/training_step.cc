#include "step/training_step.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "common/hash.h"
#include "engine/engine.h"
#include "epoch/step_epoch.h"
#include "sim/sim_backend.h"
#include "step/caching_allocator.h"

namespace zpp::step {
namespace {

// The weight of element i of layer l's shard on `rank` in `step`: changes every step.
float Weight(int rank, size_t layer, int step, size_t i) {
  uint64_t h = (static_cast<uint64_t>(rank) << 40) ^ (layer << 24) ^ (uint64_t(step) << 56) ^ i;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<float>(static_cast<int64_t>(h % 2000001) - 1000000) * 1e-6f;
}

struct ErrorSum {
  std::mutex mutex;
  double error = 0;
  double reference = 0;
  void Add(double e, double r) {
    std::lock_guard<std::mutex> lock(mutex);
    error += e;
    reference += r;
  }
  double Relative() const { return reference == 0 ? 0 : std::sqrt(error / reference); }
};

}  // namespace

std::string_view InputBuffersName(InputBuffers buffers) {
  return buffers == InputBuffers::kFramework ? "framework" : "dedicated";
}

bool ParseInputBuffers(std::string_view name, InputBuffers* out) {
  for (InputBuffers b : {InputBuffers::kDedicated, InputBuffers::kFramework}) {
    if (name == InputBuffersName(b)) {
      *out = b;
      return true;
    }
  }
  return false;
}

namespace {

bool Selects(int selector, int rank) { return selector == kAllRanks || selector == rank; }

// Weight() as an optimizer moves it: step 0's, plus step_update x a value in [-1, 1] per step.
float UpdatedWeight(const TrainingSpec& spec, int rank, size_t layer, int step, size_t i) {
  if (spec.step_update == 0) return Weight(rank, layer, step, i);
  float value = Weight(rank, layer, 0, i);
  for (int s = 1; s <= step; ++s) value += spec.step_update * Weight(rank, layer, s, i);
  return value;
}

// The value of element i of `rank`'s shard of `layer` in `step`, as the replay sets it.
float ShardValue(const TrainingSpec& spec, int rank, size_t layer, int step, size_t i,
                 bool tampered) {
  const size_t count = spec.layer_counts[layer];
  if (tampered && layer == 0 && Selects(spec.tamper_rank, rank) && i + 1 == count) return 3.0f;
  const bool last = layer + 1 == spec.layer_counts.size() && layer != 0;
  if (spec.constant_until_step >= 0 && count == spec.layer_counts[0] &&
      (layer == 0 || (last && step < spec.constant_until_step))) {
    return 1.0f;
  }
  const bool twin = last && Selects(spec.twin_rank, rank) && count == spec.layer_counts[0] &&
                    (spec.twin_step < 0 || step == spec.twin_step);
  return UpdatedWeight(spec, rank, twin ? 0 : layer, step, i);
}

}  // namespace

TrainingResult RunTraining(const TrainingSpec& spec) {
  const int n = spec.layout.world_size();
  const size_t element = NcclTypeBytes(spec.dtype);
  const size_t layers = spec.layer_counts.size();
  size_t model_shard_bytes = 0;
  for (size_t count : spec.layer_counts) model_shard_bytes += count * element;
  const plan::Shape shape = sim::ShapeOf(spec.layout);
  const bool lossless = !spec.settings.qwz;

  TrainingResult result;
  result.plain_gather_bytes = static_cast<double>((shape.nodes - 1) * model_shard_bytes);
  result.off_node_bytes_per_step.assign(spec.steps, 0);
  result.cluster_plain_gather_bytes = n * result.plain_gather_bytes;
  result.cluster_off_node_bytes_per_step.assign(spec.steps, 0);
  result.nan_outputs_per_rank.assign(n, 0);
  result.stale_outputs_per_rank.assign(n, 0);
  // Steps end at different times on different ranks: each rank adds its own share.
  std::vector<std::atomic<uint64_t>> cluster_bytes(spec.steps);
  std::vector<std::atomic<uint64_t>> step_hits(spec.steps);
  std::vector<uint64_t> digests(n, 0);
  std::atomic<uint64_t> hits{0}, failures_reported{0};
  std::vector<uint64_t> kept_peaks(n, 0);  // per rank
  std::atomic<int> failures{0}, mismatches{0};
  std::atomic<uint64_t> harness_syncs{0};
  std::atomic<uint64_t> host_waits{0};
  std::atomic<size_t> order_violations{0};
  std::mutex order_mutex;
  std::string first_order_violation;
  std::atomic<size_t> allocator_blocks{0};
  ErrorSum weights, gradients;
  std::vector<ErrorSum> step_weights(spec.steps);
  std::atomic<uint64_t> delta_calls{0}, delta_full{0};
  sim::SimWorld world(spec.layout);
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    StepEpoch epoch;
    StatsCounters stats;
    engine::EngineOptions options;
    options.settings = spec.settings;
    options.hpz_max_bytes = spec.hpz_max_bytes;
    options.epoch = [&epoch] { return epoch.Current(); };
    backend.EnableStreamOrderCheckForTesting();  // before the engine allocates anything
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> forward_stream, backward_stream, scatter_stream;
    if (engine.Prepare() != ncclSuccess || backend.CreateStream(&forward_stream) != ncclSuccess ||
        backend.CreateStream(&backward_stream) != ncclSuccess ||
        backend.CreateStream(&scatter_stream) != ncclSuccess) {
      ++failures;
      return;
    }
    // The stream each phase runs on: one for all, or FSDP2's own for each.
    Stream* stream = forward_stream.get();
    Stream* const backward = spec.phase_streams ? backward_stream.get() : stream;
    Stream* const scatter = spec.phase_streams ? scatter_stream.get() : stream;
    if (rank == spec.host_allocation_fails_rank) backend.SetHostAllocationFailsForTesting(true);
    if (rank == spec.event_creation_fails_rank) backend.SetEventCreationFailsForTesting(true);
    CachingAllocator allocator;
    std::vector<std::vector<uint8_t>> shards(layers);
    for (size_t l = 0; l < layers; ++l) shards[l].resize(spec.layer_counts[l] * element);
    std::vector<std::vector<uint8_t>> first(layers);  // each layer's first output in the step
    std::vector<bool> gathered(layers);
    std::vector<uint8_t> output, gradient_in, gradient_out;
    uint64_t last_off_node = 0;
    uint64_t last_hits = 0;
    uint64_t& digest = digests[rank];
    int step = 0;
    bool tampered = false;
    TrainingPass pass = TrainingPass::kForward;  // of the gathers issued now

    auto run_gather = [&](size_t l, std::vector<uint8_t>& out) {
      const size_t count = spec.layer_counts[l];
      const size_t bytes = count * n * element;
      void* input = shards[l].data();
      std::byte* block = nullptr;
      if (spec.buffers == InputBuffers::kFramework) {
        // FSDP2: a fresh output block, the shard copied into this rank's slice, gathered in place.
        block = allocator.Allocate(bytes);
        std::byte* slice = block + rank * count * element;
        backend.Launch(*stream, [&shards, slice, l, count, element] {
          std::memcpy(slice, shards[l].data(), count * element);
        });
        input = slice;
      } else {
        out.assign(bytes, 0);
      }
      void* recv = block != nullptr ? static_cast<void*>(block) : out.data();
      if (engine.AllGather({input, recv, count, spec.dtype, pass}, *stream) != ncclSuccess) {
        ++failures;
      }
      backend.Synchronize(*stream);
      ++harness_syncs;
      if (block != nullptr) {
        out.assign(reinterpret_cast<uint8_t*>(block), reinterpret_cast<uint8_t*>(block) + bytes);
        allocator.Free(block, bytes);
      }
    };

    // One gather of layer l, checked against the exact current weights of every rank.
    auto gather = [&](size_t l) {
      run_gather(l, output);
      uint64_t fingerprint = 0;
      codec::Fingerprint({reinterpret_cast<const std::byte*>(output.data()), output.size()},
                         &fingerprint);
      digest = HashCombine(digest, fingerprint);
      const size_t count = spec.layer_counts[l];
      bool has_nan = false;
      std::vector<float> got(count * n);
      codec::LoadElements(output.data(), spec.dtype, 0, got.size(), got.data());
      for (float v : got) has_nan |= std::isnan(v);
      if (has_nan) {
        ++result.nan_outputs_per_rank[rank];
        return;
      }
      if (!gathered[l]) {
        gathered[l] = true;
        first[l] = output;
      } else if (output != first[l]) {
        ++mismatches;
      }
      double e = 0, r = 0;
      bool stale = false;
      for (int src = 0; src < n; ++src) {
        for (size_t i = 0; i < count; ++i) {
          float exact_f = ShardValue(spec, src, l, step, i, tampered);
          uint8_t held[4];
          codec::StoreElements(held, spec.dtype, 0, 1, &exact_f);
          float exact = 0;
          codec::LoadElements(held, spec.dtype, 0, 1, &exact);
          const float value = got[src * count + i];
          stale |= lossless && value != exact;
          e += (value - exact) * (value - exact);
          r += exact * exact;
        }
      }
      if (stale) ++result.stale_outputs_per_rank[rank];
      weights.Add(e, r);
      step_weights[step].Add(e, r);
    };

    auto reduce_scatter = [&](size_t l) {
      const size_t count = spec.layer_counts[l];
      std::vector<float> grads(count * n);
      for (size_t i = 0; i < grads.size(); ++i) grads[i] = Weight(rank + 7, l, step, i);
      gradient_in.resize(count * n * element);
      gradient_out.assign(count * element, 0);
      codec::StoreElements(gradient_in.data(), spec.dtype, 0, grads.size(), grads.data());
      if (engine.ReduceScatter({gradient_in.data(), gradient_out.data(), count, spec.dtype,
                                plan::Reduction::kSum, 1.0f},
                               *scatter) != ncclSuccess) {
        ++failures;
      }
      backend.Synchronize(*scatter);
      ++harness_syncs;
      double e = 0, r = 0;
      for (size_t i = 0; i < count; ++i) {
        double exact = 0;
        for (int src = 0; src < n; ++src) {
          float g = Weight(src + 7, l, step, rank * count + i);
          uint8_t held[4];
          codec::StoreElements(held, spec.dtype, 0, 1, &g);
          codec::LoadElements(held, spec.dtype, 0, 1, &g);
          exact += g;
        }
        float got = 0;
        codec::LoadElements(gradient_out.data(), spec.dtype, i, 1, &got);
        e += (got - exact) * (got - exact);
        r += exact * exact;
      }
      gradients.Add(e, r);
    };

    for (step = 0; step < spec.steps; ++step) {
      tampered = false;
      if (rank == spec.damage_reference_rank && step == spec.damage_reference_step) {
        const int nodes = backend.GroupSize(GroupKind::kInterNode);
        const int other = (backend.GroupRank(GroupKind::kInterNode) + 1) % nodes;
        engine::WeightDeltas* deltas = engine.deltas_for_testing();
        if (deltas == nullptr ||
            !deltas->DamageReferenceForTesting(0, other * spec.layer_counts[0] * element)) {
          ++failures;  // the test expected a reference there
        }
      }
      for (size_t l = 0; l < layers; ++l) {
        std::vector<float> values(spec.layer_counts[l]);
        for (size_t i = 0; i < values.size(); ++i)
          values[i] = ShardValue(spec, rank, l, step, i, false);
        codec::StoreElements(shards[l].data(), spec.dtype, 0, values.size(), values.data());
        gathered[l] = false;
      }
      for (int micro = 0; micro < spec.micro_batches; ++micro) {
        stream = forward_stream.get();
        pass = TrainingPass::kForward;
        for (size_t l = 0; l < layers; ++l) gather(l);
        if (micro == 0 && step == spec.extra_gather_step) gather(spec.extra_gather_layer);
        if (micro == 0 && step == spec.tamper_step) {
          tampered = true;
          if (Selects(spec.tamper_rank, rank)) {
            const size_t last = spec.layer_counts[0] - 1;
            const float value = ShardValue(spec, rank, 0, step, last, true);
            codec::StoreElements(shards[0].data(), spec.dtype, last, 1, &value);
          }
          // The tampered layer's later outputs are compared with the exact weights only.
          gathered[0] = false;
        }
        stream = backward;
        pass = TrainingPass::kBackward;
        for (size_t l = layers; l-- > 0;) {
          if (micro == 0 && step == spec.missing_gather_step && l == spec.missing_gather_layer) {
            continue;
          }
          if (static_cast<int>(l) == spec.unsharded_layer) continue;
          gather(l);
        }
        for (size_t l = layers; l-- > 0;) reduce_scatter(l);
      }
      if (step + 1 <= spec.advance_epoch_steps) epoch.Advance();
      const uint64_t off_node =
          world.SentBytes(rank, zppLinkInterNode) + world.SentBytes(rank, zppLinkInterRack);
      if (rank == 0) result.off_node_bytes_per_step[step] = double(off_node - last_off_node);
      cluster_bytes[step] += off_node - last_off_node;
      last_off_node = off_node;
      zppStats_t now{};
      stats.Snapshot(&now);
      step_hits[step] += now.hpz_hits - last_hits;
      last_hits = now.hpz_hits;
    }
    engine.PollDeviceErrors();
    zppStats_t snapshot{};
    stats.Snapshot(&snapshot);
    hits += snapshot.hpz_hits;
    failures_reported += snapshot.hpz_verify_failures;
    delta_calls += snapshot.qwz_delta_calls;
    delta_full += snapshot.qwz_delta_full;
    kept_peaks[rank] = snapshot.hpz_kept_bytes_peak;
    const sim::StreamOrderChecker& order = *backend.stream_order();
    order_violations += order.violation_count();
    if (order.violation_count() != 0) {
      std::lock_guard<std::mutex> lock(order_mutex);
      if (first_order_violation.empty()) first_order_violation = order.violations().front();
    }
    host_waits += snapshot.host_waits;
    if (rank == 0) allocator_blocks = allocator.blocks();
  });
  for (int step = 0; step < spec.steps; ++step) {
    result.cluster_off_node_bytes_per_step[step] = static_cast<double>(cluster_bytes[step].load());
    result.hits_per_step.push_back(step_hits[step].load());
  }
  for (int r = 0; r < n; ++r) {
    result.nan_outputs += result.nan_outputs_per_rank[r];
    result.stale_outputs += result.stale_outputs_per_rank[r];
    result.output_digest = HashCombine(result.output_digest, digests[r]);
  }
  result.ranks_gathered_alike =
      std::all_of(digests.begin(), digests.end(), [&](uint64_t d) { return d == digests[0]; });
  result.weight_rel_l2 = weights.Relative();
  result.gradient_rel_l2 = gradients.Relative();
  for (const ErrorSum& sum : step_weights) result.weight_rel_l2_per_step.push_back(sum.Relative());
  result.delta_calls = delta_calls;
  result.delta_full = delta_full;
  result.hits = hits;
  result.verify_failures = failures_reported;
  result.hpz_kept_bytes_peak = *std::max_element(kept_peaks.begin(), kept_peaks.end());
  result.backward_mismatches = mismatches;
  result.failures = failures;
  result.engine_host_syncs = world.host_synchronizations() - harness_syncs.load();
  result.stats_host_waits = host_waits.load();
  result.stream_order_violations = order_violations.load();
  result.first_stream_order_violation = first_order_violation;
  result.allocator_blocks = allocator_blocks;
  return result;
}

namespace {

double SteadyMean(const std::vector<double>& per_step, int first_steady_step) {
  double sum = 0;
  int steps = 0;
  for (size_t s = static_cast<size_t>(first_steady_step); s < per_step.size(); ++s, ++steps) {
    sum += per_step[s];
  }
  return steps == 0 ? 0 : sum / steps;
}

}  // namespace

double SteadyRelativeVolume(const TrainingResult& result, bool cluster, int first_steady_step) {
  const double unit = cluster ? result.cluster_plain_gather_bytes : result.plain_gather_bytes;
  if (unit == 0) return 0;
  const auto& per_step =
      cluster ? result.cluster_off_node_bytes_per_step : result.off_node_bytes_per_step;
  return SteadyMean(per_step, first_steady_step) / unit;
}

double SteadyClusterBytesPerStep(const TrainingResult& result, int first_steady_step) {
  return SteadyMean(result.cluster_off_node_bytes_per_step, first_steady_step);
}

}  // namespace zpp::step
