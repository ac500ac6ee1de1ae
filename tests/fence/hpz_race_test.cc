// DeepSpeed's hpZ race, reproduced through the engine: the forward all-gather fills the
// secondary partition on stream A, whose work is slow; the backward all-gather of the same
// weights reuses it from stream B at once, with no host synchronization in between. With the
// fence off (ZPP_FENCE=0) the reuse reads the partition before it is written and the output is
// wrong; with the fence, stream B waits for stream A on the device and the output is exact.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "codec/element_io.h"
#include "engine/engine.h"
#include "epoch/step_epoch.h"
#include "sim/sim_backend.h"

namespace zpp {
namespace {

struct RaceResult {
  int wrong_outputs = 0;
  uint64_t hits = 0;
  size_t order_violations = 0;  // sim/stream_order_checker.h: decided by order, not timing
};

RaceResult RunForwardBackwardRace(bool fence_enabled, int race_steps) {
  constexpr size_t kCount = 4096;
  constexpr int kTrustSteps = 3;  // races from epoch 3
  std::atomic<int> wrong{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<size_t> violations{0};
  const sim::ClusterLayout layout = sim::ClusterLayout::Uniform(2, 2);
  const plan::Shape shape = sim::ShapeOf(layout);
  sim::SimWorld world(layout);
  world.RunRanks([&](sim::SimBackend& backend) {
    const int n = backend.world_size();
    StepEpoch epoch;
    StatsCounters stats;
    engine::EngineOptions options;
    options.settings.hpz = true;
    options.settings.min_bytes = 0;
    options.fence_enabled = fence_enabled;
    options.epoch = [&epoch] { return epoch.Current(); };
    backend.EnableStreamOrderCheckForTesting();
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> forward_stream, backward_stream;
    ASSERT_EQ(backend.CreateStream(&forward_stream), ncclSuccess);
    ASSERT_EQ(backend.CreateStream(&backward_stream), ncclSuccess);
    std::vector<float> shard(kCount), forward(kCount * n), backward(kCount * n);
    for (int step = 0; step < kTrustSteps + race_steps; ++step) {
      for (size_t i = 0; i < kCount; ++i)
        shard[i] = float(step * 100000 + backend.rank() * 10000 + i);
      const bool race = step >= kTrustSteps;
      backend.SetStreamDelayForTesting(*forward_stream, std::chrono::microseconds(race ? 400 : 0));
      ASSERT_EQ(engine.AllGather(
                    {shard.data(), forward.data(), kCount, ncclFloat32, TrainingPass::kForward},
                    *forward_stream),
                ncclSuccess);
      Stream& reuse_stream = race ? *backward_stream : *forward_stream;
      ASSERT_EQ(engine.AllGather(
                    {shard.data(), backward.data(), kCount, ncclFloat32, TrainingPass::kBackward},
                    reuse_stream),
                ncclSuccess);
      backend.Synchronize(*forward_stream);
      backend.Synchronize(*backward_stream);
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < kCount; ++i) {
          if (backward[r * kCount + i] != float(step * 100000 + r * 10000 + i)) {
            ++wrong;
            break;
          }
        }
      }
      epoch.Advance();
    }
    engine.PollDeviceErrors();
    zppStats_t snapshot{};
    stats.Snapshot(&snapshot);
    hits += snapshot.hpz_hits;
    violations += backend.stream_order()->violation_count();
  });
  return {wrong.load(), hits.load(), violations.load()};
}

TEST(HpzRaceTest, WithoutTheFenceTheReuseReadsAnUnwrittenPartition) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the unfenced run is a real data race, which TSan reports; under TSan only "
                  "the fenced run is checked";
#endif
  const RaceResult result = RunForwardBackwardRace(/*fence_enabled=*/false, 6);
  EXPECT_GT(result.hits, 0u);
  EXPECT_GT(result.wrong_outputs, 0) << "the race detector never fired without the fence";
  EXPECT_GT(result.order_violations, 0u) << "the stream-order checker missed the race";
}

TEST(HpzRaceTest, WithTheFenceTheReuseIsAlwaysExact) {
  const RaceResult result = RunForwardBackwardRace(/*fence_enabled=*/true, 6);
  EXPECT_EQ(result.hits, 4u * (3u + 6u));  // every step's backward gather, on every rank
  EXPECT_EQ(result.wrong_outputs, 0);
  EXPECT_EQ(result.order_violations, 0u);
}

}  // namespace
}  // namespace zpp
