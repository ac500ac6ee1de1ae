// qwZ's weight deltas (ZPP_QWZ_DELTA, engine/weight_deltas.h) on a ZeRO-3 step replayed over the
// simulated cluster, with weights that an optimizer moves a little each step: deltas from the
// second step on, at the bytes of the delta format, with gathered weights closer to the true
// ones than int8's; every rank gathering the same bits; a reference that drifted on one rank
// never turning into silently wrong weights; a changed call pattern never handing a layer
// another layer's reference.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "codec/element_io.h"
#include "engine/engine.h"
#include "engine_harness.h"
#include "sim/cluster_layout.h"
#include "sim/sim_backend.h"
#include "sim/sim_world.h"
#include "step/training_step.h"

namespace zpp::test {
namespace {

using step::RunTraining;
using step::TrainingResult;
using step::TrainingSpec;

constexpr int kSteps = 8;

plan::Settings DeltaSettings(int bits) {
  plan::Settings s = TechniquesOn(true, true, true);  // qwZ int8 full sends, hpZ, qgZ 8/4
  s.qwz_delta = true;
  s.qwz_delta_bits = bits;
  return s;
}

TrainingSpec Spec(plan::Settings settings) {
  TrainingSpec spec;
  spec.layout = sim::ClusterLayout::Uniform(2, 2);
  spec.settings = settings;
  spec.layer_counts = {4096, 1000, 2560, 4096};
  spec.steps = kSteps;
  spec.step_update = 1e-3f;  // weights in [-1, 1]: an optimizer's step of 0.1%
  return spec;
}

// From the second step on every forward gather (the fills: backward gathers hit hpZ) sends a
// 4-bit delta, so the inter-node bytes fall below zero++'s by the weights' half;
// the gathered weights err less than int8 weights do (zero++, measured 0.0044 in hpz_test), and
// every rank gathers the same bits.
TEST(WeightDeltaStepTest, DeltasFromTheSecondStepBelowInt8sErrorAndBytes) {
  const TrainingResult zeropp = RunTraining(Spec(TechniquesOn(true, true, true)));
  const TrainingResult delta = RunTraining(Spec(DeltaSettings(4)));
  ASSERT_EQ(delta.failures, 0);
  EXPECT_EQ(delta.nan_outputs, 0);
  EXPECT_EQ(delta.verify_failures, 0u);
  EXPECT_EQ(delta.stream_order_violations, 0u) << delta.first_stream_order_violation;
  EXPECT_TRUE(delta.ranks_gathered_alike);
  EXPECT_EQ(delta.backward_mismatches, 0);
  // Step 0 (nothing kept) sends its 4 forward fills per rank in full; from step 1 each sends a
  // delta (the backward gathers hit hpZ in every step).
  EXPECT_EQ(delta.delta_calls, 4u * 4u * (kSteps - 1));
  EXPECT_EQ(delta.delta_full, 4u * 4u);
  for (int s = 1; s < kSteps; ++s) {
    EXPECT_LT(delta.weight_rel_l2_per_step[s], 0.0044 / 4) << "step " << s;
  }
  EXPECT_GE(delta.weight_rel_l2_per_step[0], 0.003) << "step 0 is int8's full send";
  // Bytes per steady step: zero++'s int8 forward gather (about half a bf16 gather) becomes a
  // 4-bit delta (about a quarter): at least 0.2 of a plain model gather saved, of zero++'s 0.77.
  const double zeropp_volume = step::SteadyRelativeVolume(zeropp, false);
  const double delta_volume = step::SteadyRelativeVolume(delta, false);
  RecordProperty("zeropp_volume", std::to_string(zeropp_volume));
  RecordProperty("delta_volume", std::to_string(delta_volume));
  RecordProperty("weight_rel_l2_step3", std::to_string(delta.weight_rel_l2_per_step[3]));
  EXPECT_LT(delta_volume, zeropp_volume - 0.2);
}

// 3-bit deltas (int3's seven levels) sit between 4-bit and 2-bit ones: fewer bytes than 4 bits,
// weights closer to the true ones than 2 bits give, and the same guarantees (every rank alike,
// nothing failed, no NaN).
TEST(WeightDeltaStepTest, ThreeBitDeltasSitBetweenTwoAndFourBits) {
  const TrainingResult two = RunTraining(Spec(DeltaSettings(2)));
  const TrainingResult three = RunTraining(Spec(DeltaSettings(3)));
  const TrainingResult four = RunTraining(Spec(DeltaSettings(4)));
  ASSERT_EQ(three.failures, 0);
  EXPECT_EQ(three.nan_outputs, 0);
  EXPECT_EQ(three.verify_failures, 0u);
  EXPECT_TRUE(three.ranks_gathered_alike);
  EXPECT_EQ(three.delta_calls, four.delta_calls);
  for (int s = 1; s < kSteps; ++s) {
    EXPECT_LT(three.weight_rel_l2_per_step[s], two.weight_rel_l2_per_step[s]) << "step " << s;
    EXPECT_GT(three.weight_rel_l2_per_step[s], four.weight_rel_l2_per_step[s]) << "step " << s;
  }
  const double v2 = step::SteadyRelativeVolume(two, false);
  const double v3 = step::SteadyRelativeVolume(three, false);
  const double v4 = step::SteadyRelativeVolume(four, false);
  RecordProperty("delta_volume_2_3_4",
                 std::to_string(v2) + " " + std::to_string(v3) + " " + std::to_string(v4));
  RecordProperty("weight_rel_l2_step3_3bit", std::to_string(three.weight_rel_l2_per_step[3]));
  EXPECT_LT(v2, v3);
  EXPECT_LT(v3, v4);
}

// One rank's copy of another node's reference drifts (a flipped bit) before step 3: that rank's
// delta check fails, its node gathers NaN (loud, never wrong weights), the failure is counted,
// and once the epoch records carry it to every rank (two advances later) every gather sends in
// full, with no NaN again.
TEST(WeightDeltaStepTest, AReferenceThatDriftsIsLoudThenDeltasStop) {
  TrainingSpec spec = Spec(DeltaSettings(4));
  spec.damage_reference_rank = 1;
  spec.damage_reference_step = 3;
  const TrainingResult result = RunTraining(spec);
  ASSERT_EQ(result.failures, 0);
  EXPECT_GT(result.verify_failures, 0u);
  EXPECT_GT(result.nan_outputs, 0);
  EXPECT_EQ(result.nan_outputs_per_rank[2] + result.nan_outputs_per_rank[3], 0)
      << "the other node's ranks hold good references";
  // Steps 5 on: deltas off for good, and no NaN (the errors of those steps are all finite).
  for (int s = 5; s < kSteps; ++s) {
    EXPECT_TRUE(std::isfinite(result.weight_rel_l2_per_step[s])) << s;
    EXPECT_LT(result.weight_rel_l2_per_step[s], 0.006) << "int8 full sends at step " << s;
  }
  const TrainingResult clean = RunTraining(Spec(DeltaSettings(4)));
  EXPECT_LT(result.delta_calls, clean.delta_calls);
}

// Every rank's all-gather outputs, call by call (outputs[rank][call]), of a run whose step e
// gathers layers of the sizes epochs[e] in order (bf16 weights, a layer known by its size, moved a
// little each step), hpZ never hitting (each layer is gathered once per step).
using Outputs = std::vector<std::vector<std::vector<uint16_t>>>;
Outputs RunGathers(const std::vector<std::vector<size_t>>& epochs, const plan::Settings& settings,
                   uint64_t refresh, zppStats_t* stats_out) {
  Outputs outputs(4);
  StatsCounters stats;
  sim::SimWorld world(sim::ClusterLayout::Uniform(2, 2));
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    uint64_t epoch = 0;
    engine::EngineOptions options;
    options.settings = settings;
    options.settings.min_bytes = 0;
    options.delta_refresh = refresh;
    options.epoch = [&] { return epoch; };
    engine::Engine engine(backend, sim::ShapeOf(world.layout()), options, stats);
    ASSERT_EQ(engine.Prepare(), ncclSuccess);
    for (epoch = 0; epoch < epochs.size(); ++epoch) {
      for (const size_t count : epochs[epoch]) {
        std::vector<float> values(count);
        for (size_t i = 0; i < count; ++i) {
          values[i] = std::sin(0.01f * i + rank + count) + 1e-3f * std::cos(0.3f * i * epoch);
        }
        std::vector<uint16_t> shard(count);
        codec::StoreElements(shard.data(), ncclBfloat16, 0, count, values.data());
        std::vector<uint16_t> output(count * 4);
        ASSERT_EQ(engine.AllGather({shard.data(), output.data(), count, ncclBfloat16}, *stream),
                  ncclSuccess);
        backend.Synchronize(*stream);
        outputs[rank].push_back(std::move(output));
      }
    }
  });
  if (stats_out != nullptr) stats.Snapshot(stats_out);
  return outputs;
}

constexpr size_t kA = 2048, kB = 4096;

// (A, B), (A, B), (B, A). The second step sends deltas; in the third the place of A holds B, so
// it and every later call send in full, bitwise what qwZ int8 with hpZ gives, never a delta
// against the other layer's reference.
TEST(WeightDeltaStepTest, AChangedPatternNeverAppliesADeltaToAnotherLayer) {
  const std::vector<std::vector<size_t>> epochs = {{kA, kB}, {kA, kB}, {kB, kA}};
  zppStats_t with_stats{};
  const Outputs with = RunGathers(epochs, DeltaSettings(4), 100, &with_stats);
  const Outputs without = RunGathers(epochs, TechniquesOn(true, true, false), 100, nullptr);
  EXPECT_EQ(with_stats.qwz_delta_calls, 2u * 4u) << "the second step's two calls, on 4 ranks";
  EXPECT_EQ(with_stats.qwz_delta_full, 4u * 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(with[rank][0], without[rank][0]) << "first step: full sends";
    EXPECT_EQ(with[rank][1], without[rank][1]);
    EXPECT_NE(with[rank][2], without[rank][2]) << "A: a delta against A's reference";
    EXPECT_NE(with[rank][3], without[rank][3]) << "B: a delta against B's reference";
    EXPECT_EQ(with[rank][4], without[rank][4]) << "B at A's place: in full";
    EXPECT_EQ(with[rank][5], without[rank][5]) << "after the change: in full";
  }
}

// ZPP_QWZ_DELTA_REFRESH=2: steps 0 and 2 send in full (bitwise qwZ int8's), 1 and 3 deltas.
TEST(WeightDeltaStepTest, EveryRefreshEpochSendsInFull) {
  const std::vector<std::vector<size_t>> epochs = {{kA, kB}, {kA, kB}, {kA, kB}, {kA, kB}};
  zppStats_t stats{};
  const Outputs with = RunGathers(epochs, DeltaSettings(4), 2, &stats);
  const Outputs without = RunGathers(epochs, TechniquesOn(true, true, false), 2, nullptr);
  EXPECT_EQ(stats.qwz_delta_calls, 2u * 2u * 4u);
  EXPECT_EQ(stats.qwz_delta_full, 2u * 2u * 4u);
  for (int rank = 0; rank < 4; ++rank) {
    for (size_t call = 0; call < 8; ++call) {
      const bool full = call / 2 % 2 == 0;
      EXPECT_EQ(with[rank][call] == without[rank][call], full)
          << "rank " << rank << " call " << call;
    }
  }
}

}  // namespace
}  // namespace zpp::test
