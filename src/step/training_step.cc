#include "step/training_step.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>

#include "codec/element_io.h"
#include "engine/engine.h"
#include "epoch/step_epoch.h"
#include "sim/sim_backend.h"

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

TrainingResult RunTraining(const TrainingSpec& spec) {
  const int n = spec.layout.world_size();
  const size_t element = codec::ElementBytes(spec.dtype);
  const size_t layers = spec.layer_counts.size();
  size_t model_shard_bytes = 0;
  for (size_t count : spec.layer_counts) model_shard_bytes += count * element;
  const plan::Shape shape = sim::ShapeOf(spec.layout);

  TrainingResult result;
  result.plain_gather_bytes = static_cast<double>((shape.nodes - 1) * model_shard_bytes);
  result.off_node_bytes_per_step.assign(spec.steps, 0);
  result.cluster_plain_gather_bytes = n * result.plain_gather_bytes;
  result.cluster_off_node_bytes_per_step.assign(spec.steps, 0);
  // Steps end at different times on different ranks: each rank adds its own share.
  std::vector<std::atomic<uint64_t>> cluster_bytes(spec.steps);
  std::atomic<uint64_t> hits{0}, failures_reported{0};
  std::atomic<int> failures{0}, mismatches{0}, nans{0};
  std::atomic<uint64_t> harness_syncs{0};
  ErrorSum weights, gradients;
  sim::SimWorld world(spec.layout);
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    StepEpoch epoch;
    StatsCounters stats;
    engine::EngineOptions options;
    options.settings = spec.settings;
    options.hpz_max_bytes = spec.hpz_max_bytes;
    options.epoch = [&epoch] { return epoch.Current(); };
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> stream;
    if (backend.CreateStream(&stream) != ncclSuccess) {
      ++failures;
      return;
    }
    const bool shared = spec.buffers == InputBuffers::kShared ||
                        (spec.buffers == InputBuffers::kSharedOnRankZero && rank == 0);
    size_t max_count = 0;
    for (size_t count : spec.layer_counts) max_count = std::max(max_count, count);
    std::vector<std::vector<uint8_t>> shards(layers);
    for (size_t l = 0; l < layers; ++l) shards[l].resize(spec.layer_counts[l] * element);
    std::vector<uint8_t> shared_input(max_count * element);
    std::vector<std::vector<uint8_t>> forward(layers);
    std::vector<uint8_t> output, gradient_in, gradient_out;
    uint64_t last_off_node = 0;

    auto gather = [&](size_t l, std::vector<uint8_t>& out) {
      const size_t count = spec.layer_counts[l];
      void* input = shards[l].data();
      if (shared) {
        // FSDP2: the layer's shard is copied into the one all-gather input buffer first.
        backend.Launch(*stream, [&, l, count] {
          std::memcpy(shared_input.data(), shards[l].data(), count * element);
        });
        input = shared_input.data();
      }
      out.assign(count * n * element, 0);
      if (engine.AllGather({input, out.data(), count, spec.dtype}, *stream) != ncclSuccess) {
        ++failures;
      }
      backend.Synchronize(*stream);
      ++harness_syncs;
    };

    for (int step = 0; step < spec.steps; ++step) {
      for (size_t l = 0; l < layers; ++l) {
        std::vector<float> values(spec.layer_counts[l]);
        for (size_t i = 0; i < values.size(); ++i) values[i] = Weight(rank, l, step, i);
        codec::StoreElements(shards[l].data(), spec.dtype, 0, values.size(), values.data());
      }
      for (size_t l = 0; l < layers; ++l) gather(l, forward[l]);
      if (rank == spec.tamper_rank && step == spec.tamper_step) {
        std::vector<float> values(spec.layer_counts[0], 3.0f);
        codec::StoreElements(shards[0].data(), spec.dtype, 0, values.size(), values.data());
      }
      for (size_t l = layers; l-- > 0;) {
        gather(l, output);
        bool has_nan = false;
        for (size_t i = 0; i < output.size() / element && !has_nan; ++i) {
          float v = 0;
          codec::LoadElements(output.data(), spec.dtype, i, 1, &v);
          has_nan = std::isnan(v);
        }
        if (has_nan) {
          ++nans;
        } else if (output != forward[l]) {
          ++mismatches;
        }
        // The exact weights of this step (tampering aside) against what arrived.
        const size_t count = spec.layer_counts[l];
        double e = 0, r = 0;
        for (int src = 0; src < n && !has_nan; ++src) {
          for (size_t i = 0; i < count; ++i) {
            float exact_f = Weight(src, l, step, i);
            uint8_t held[4];
            codec::StoreElements(held, spec.dtype, 0, 1, &exact_f);
            float exact = 0;
            codec::LoadElements(held, spec.dtype, 0, 1, &exact);
            float got = 0;
            codec::LoadElements(output.data(), spec.dtype, src * count + i, 1, &got);
            e += (got - exact) * (got - exact);
            r += exact * exact;
          }
        }
        weights.Add(e, r);
      }
      for (size_t l = layers; l-- > 0;) {
        const size_t count = spec.layer_counts[l];
        std::vector<float> grads(count * n);
        for (size_t i = 0; i < grads.size(); ++i) grads[i] = Weight(rank + 7, l, step, i);
        gradient_in.resize(count * n * element);
        gradient_out.assign(count * element, 0);
        codec::StoreElements(gradient_in.data(), spec.dtype, 0, grads.size(), grads.data());
        if (engine.ReduceScatter({gradient_in.data(), gradient_out.data(), count, spec.dtype,
                                  plan::Reduction::kSum, 1.0f},
                                 *stream) != ncclSuccess) {
          ++failures;
        }
        backend.Synchronize(*stream);
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
      }
      if (step + 1 <= spec.advance_epoch_steps) epoch.Advance();
      const uint64_t off_node =
          world.SentBytes(rank, zppLinkInterNode) + world.SentBytes(rank, zppLinkInterRack);
      if (rank == 0) result.off_node_bytes_per_step[step] = double(off_node - last_off_node);
      cluster_bytes[step] += off_node - last_off_node;
      last_off_node = off_node;
    }
    engine.PollDeviceErrors();
    zppStats_t snapshot{};
    stats.Snapshot(&snapshot);
    hits += snapshot.hpz_hits;
    failures_reported += snapshot.hpz_verify_failures;
  });
  for (int step = 0; step < spec.steps; ++step) {
    result.cluster_off_node_bytes_per_step[step] = static_cast<double>(cluster_bytes[step].load());
  }
  result.weight_rel_l2 = weights.Relative();
  result.gradient_rel_l2 = gradients.Relative();
  result.hits = hits;
  result.verify_failures = failures_reported;
  result.backward_mismatches = mismatches;
  result.nan_outputs = nans;
  result.failures = failures;
  result.engine_host_syncs = world.host_synchronizations() - harness_syncs.load();
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
