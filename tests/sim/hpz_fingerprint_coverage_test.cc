// hpZ's fingerprint covers the whole shard, every byte of every element: a change to the shard's
// last element only, inside one step epoch, is seen by a reuse (NaN sent in place of its secondary
// partition, so its node's outputs hold NaN, and counted). A backward gather whose pass zpp was
// not told is only a fresh one: exact everywhere, nothing counted. A fingerprint of
// `count` bytes instead of `count x element size` would see only the first half (fp16, bf16) or
// quarter (fp32) of the shard, and a stale secondary partition would be delivered as current.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "codec/element_io.h"
#include "engine/engine.h"
#include "epoch/step_epoch.h"
#include "sim/sim_backend.h"

namespace zpp {
namespace {

constexpr size_t kCount = 1024;
constexpr int kTamperRank = 1;

struct Outcome {
  int nan_outputs = 0;    // ranks whose backward output of the tampered step holds a NaN
  int exact_outputs = 0;  // ranks whose backward output of that step is exactly the inputs
  uint64_t hits = 0;      // over every rank and step
  uint64_t tamper_rank_failures = 0;
};

// Small integers: exact in fp32, fp16 and bf16, so every lossless output compares exactly.
float Value(int step, int rank, size_t i) {
  return static_cast<float>((step * 7 + rank * 13 + static_cast<int>(i)) % 100);
}

// Steps 0..`tamper_step`; in every step a forward and a backward all-gather of each rank's
// shard on one stream, the epoch advanced after the step. In step `tamper_step`, between the
// two gathers, rank 1 changes the last element of its shard (and only that). The second gather
// is of `second_pass`.
Outcome RunWithLastElementChanged(ncclDataType_t dtype, bool qwz, int tamper_step,
                                  TrainingPass second_pass = TrainingPass::kBackward) {
  const sim::ClusterLayout layout = sim::ClusterLayout::Uniform(2, 2);
  const plan::Shape shape = sim::ShapeOf(layout);
  std::atomic<int> nan_outputs{0}, exact_outputs{0};
  std::atomic<uint64_t> hits{0}, tamper_failures{0};
  sim::SimWorld world(layout);
  world.RunRanks([&](sim::SimBackend& backend) {
    const int n = backend.world_size();
    const size_t element = NcclTypeBytes(dtype);
    StepEpoch epoch;
    StatsCounters stats;
    engine::EngineOptions options;
    options.settings.hpz = true;
    options.settings.qwz = qwz;
    options.settings.min_bytes = 0;
    options.epoch = [&epoch] { return epoch.Current(); };
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    std::vector<std::byte> shard(kCount * element), forward(kCount * n * element),
        backward(kCount * n * element);
    std::vector<float> values(kCount), out(kCount * n);
    for (int step = 0; step <= tamper_step; ++step) {
      for (size_t i = 0; i < kCount; ++i) values[i] = Value(step, backend.rank(), i);
      codec::StoreElements(shard.data(), dtype, 0, kCount, values.data());
      ASSERT_EQ(engine.AllGather(
                    {shard.data(), forward.data(), kCount, dtype, TrainingPass::kForward}, *stream),
                ncclSuccess);
      const bool tamper = step == tamper_step && backend.rank() == kTamperRank;
      if (tamper) {
        backend.Synchronize(*stream);  // the forward gather has read the shard
        const float changed = values[kCount - 1] + 1.0f;
        codec::StoreElements(shard.data(), dtype, kCount - 1, 1, &changed);
      }
      ASSERT_EQ(
          engine.AllGather({shard.data(), backward.data(), kCount, dtype, second_pass}, *stream),
          ncclSuccess);
      backend.Synchronize(*stream);
      if (step == tamper_step) {
        codec::LoadElements(backward.data(), dtype, 0, kCount * n, out.data());
        bool any_nan = false, exact = true;
        for (int r = 0; r < n; ++r) {
          for (size_t i = 0; i < kCount; ++i) {
            float expected = Value(step, r, i);
            if (r == kTamperRank && i == kCount - 1) expected += 1.0f;
            const float got = out[r * kCount + i];
            any_nan |= std::isnan(got);
            // qwZ int8 on values up to 100: half a step (0.394) plus bf16's half ulp at 100
            // (0.25); still under the 1.0 by which the changed element differs.
            exact &= qwz ? std::abs(got - expected) <= 0.75f : got == expected;
          }
        }
        if (any_nan) ++nan_outputs;
        if (exact) ++exact_outputs;
      }
      epoch.Advance();
    }
    engine.PollDeviceErrors();
    zppStats_t snapshot{};
    stats.Snapshot(&snapshot);
    hits += snapshot.hpz_hits;
    if (backend.rank() == kTamperRank) tamper_failures += snapshot.hpz_verify_failures;
  });
  return {nan_outputs.load(), exact_outputs.load(), hits.load(), tamper_failures.load()};
}

class HpzFingerprintCoverageTest
    : public ::testing::TestWithParam<std::tuple<ncclDataType_t, bool>> {};

// Every step's backward gather reuses its forward fill: the tampered rank's reuse in step 2 must
// see the change and send NaN (its node's outputs) rather than its old shard.
TEST_P(HpzFingerprintCoverageTest, LastElementChangedBeforeAReuseIsSeen) {
  const auto [dtype, qwz] = GetParam();
  const Outcome outcome = RunWithLastElementChanged(dtype, qwz, /*tamper_step=*/2);
  EXPECT_EQ(outcome.hits, 3u * 4u) << "every step's backward gather should reuse on every rank";
  EXPECT_EQ(outcome.tamper_rank_failures, 1u) << "the change went unseen";
  EXPECT_GE(outcome.nan_outputs, 1) << "the tampered rank's reuse was not poisoned";
}

// The second gather of unknown pass (no hint): a full gather of what the shard holds now, never
// a reuse: every output exact, nothing counted as a failure.
TEST_P(HpzFingerprintCoverageTest, LastElementChangedBeforeAGatherOfUnknownPassIsAFreshGather) {
  const auto [dtype, qwz] = GetParam();
  const Outcome outcome =
      RunWithLastElementChanged(dtype, qwz, /*tamper_step=*/1, TrainingPass::kUnknown);
  EXPECT_EQ(outcome.hits, 0u);
  EXPECT_EQ(outcome.tamper_rank_failures, 0u);
  EXPECT_EQ(outcome.nan_outputs, 0);
  EXPECT_EQ(outcome.exact_outputs, 4);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HpzFingerprintCoverageTest,
                         ::testing::Combine(::testing::Values(ncclFloat32, ncclFloat16,
                                                              ncclBfloat16),
                                            ::testing::Bool()),
                         [](const auto& param) {
                           const ncclDataType_t dtype = std::get<0>(param.param);
                           const std::string name = dtype == ncclFloat32   ? "fp32"
                                                    : dtype == ncclFloat16 ? "fp16"
                                                                           : "bf16";
                           return name + (std::get<1>(param.param) ? "_qwz8" : "");
                         });

}  // namespace
}  // namespace zpp
