// hpZ reuse under contract 7, on a ZeRO-3 training step replayed over the simulated cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "log/log.h"
#include "step/training_step.h"

namespace zpp::test {
namespace {

using step::InputBuffers;
using step::RunTraining;
using step::TrainingResult;
using step::TrainingSpec;

plan::Settings Config(bool qwz, bool hpz, bool qgz) {
  plan::Settings s;
  s.qwz = qwz;
  s.hpz = hpz;
  s.qgz = qgz;
  s.min_bytes = 0;
  return s;
}

TrainingSpec Spec(plan::Settings settings) {
  TrainingSpec spec;
  spec.layout = sim::ClusterLayout::Uniform(2, 4);
  spec.settings = settings;
  spec.layer_counts = {4096, 1000, 2560, 4096};
  spec.steps = 5;
  return spec;
}

// Rank 0's inter-node bytes per step, from step 2 on (hpZ reuse is agreed by then), in units
// of one plain all-gather of the whole model.
double SteadyRelativeVolume(const TrainingResult& result) {
  return step::SteadyRelativeVolume(result, /*cluster=*/false);
}

TEST(TrainingStepTest, PlainZero3MovesThreeGathersPerStep) {
  const TrainingResult result = RunTraining(Spec(Config(false, false, false)));
  ASSERT_EQ(result.failures, 0);
  EXPECT_DOUBLE_EQ(SteadyRelativeVolume(result), 3.0);
  EXPECT_EQ(result.weight_rel_l2, 0.0);
  EXPECT_EQ(result.backward_mismatches, 0);
  EXPECT_EQ(result.engine_host_syncs, 0u);
}

TEST(TrainingStepTest, ZeroPlusPlusMovesAtMostPoint8) {
  const TrainingResult result = RunTraining(Spec(Config(true, true, true)));
  ASSERT_EQ(result.failures, 0);
  const double volume = SteadyRelativeVolume(result);
  // int8 weights forward (0.51), hpZ hits backward (0), int4 gradients (0.26), plus the 16-byte
  // per-rank agreement record each epoch.
  EXPECT_LE(volume, 0.80);
  EXPECT_GE(volume, 0.70);
  EXPECT_GT(result.hits, 0u);
  EXPECT_EQ(result.verify_failures, 0u);
  EXPECT_EQ(result.nan_outputs, 0);
  EXPECT_EQ(result.backward_mismatches, 0);  // a hit gives the forward gather's bits
  EXPECT_LE(result.weight_rel_l2, 0.008);
  EXPECT_LE(result.gradient_rel_l2, 0.16 + 0.008 + 0.01);
  // No host wait on the collective path; hpZ's agreement reads, once per epoch and per rank, a
  // record exchanged a whole epoch earlier (epochs 0 and 1 have nothing to read yet).
  EXPECT_EQ(result.engine_host_syncs, 8u * 3u);
}

TEST(TrainingStepTest, HpzHitsMoveNoInterNodeBytes) {
  // hpZ alone (unquantized): forward 1 gather, backward hits (0), plain reduce-scatter (1).
  const TrainingResult result = RunTraining(Spec(Config(false, true, false)));
  ASSERT_EQ(result.failures, 0);
  // Exactly: forward gather (one plain gather's bytes) + backward hits (0) + plain
  // reduce-scatter (one) + the 16-byte agreement record sent to the one other node.
  for (size_t step = 2; step < result.off_node_bytes_per_step.size(); ++step) {
    EXPECT_EQ(result.off_node_bytes_per_step[step], 2 * result.plain_gather_bytes + 16) << step;
  }
  EXPECT_EQ(result.weight_rel_l2, 0.0);  // lossless and never stale
  EXPECT_EQ(result.hits, 8u * 4u * 3u);  // every backward gather of steps 2, 3, 4 on all ranks
}

TEST(HpzMisuseTest, WeightsUpdatedWithoutEpochAdvanceAreCaughtAndNeverStale) {
  TrainingSpec spec = Spec(Config(false, true, false));
  spec.advance_epoch_steps = 0;  // the optimizer hook is missing
  const TrainingResult result = RunTraining(spec);
  ASSERT_EQ(result.failures, 0);
  EXPECT_EQ(result.hits, 0u);
  EXPECT_GT(result.verify_failures, 0u);  // the would-be reuses saw changed shards
  EXPECT_EQ(result.weight_rel_l2, 0.0);   // every output exact: no stale weight
  EXPECT_EQ(result.nan_outputs, 0);
}

TEST(HpzMisuseTest, EpochAdvanceStoppingAfterReuseStartedIsCaughtAndNeverStale) {
  TrainingSpec spec = Spec(Config(false, true, false));
  spec.advance_epoch_steps = 3;
  spec.steps = 6;
  const TrainingResult result = RunTraining(spec);
  ASSERT_EQ(result.failures, 0);
  EXPECT_GT(result.hits, 0u);
  EXPECT_GT(result.verify_failures, 0u);
  EXPECT_EQ(result.weight_rel_l2, 0.0);
}

TEST(HpzMisuseTest, SharedInputBufferAcrossLayersIsCaughtAndNeverStale) {
  TrainingSpec spec = Spec(Config(false, true, false));
  spec.layer_counts = {2048, 2048, 2048};  // one size: every layer has the same local key
  spec.buffers = InputBuffers::kShared;
  const TrainingResult result = RunTraining(spec);
  ASSERT_EQ(result.failures, 0);
  EXPECT_EQ(result.hits, 0u);
  EXPECT_GT(result.verify_failures, 0u);
  EXPECT_EQ(result.weight_rel_l2, 0.0);
}

TEST(HpzMisuseTest, RanksWhosePointersDifferNeverReuseAndNeverHang) {
  TrainingSpec spec = Spec(Config(true, true, false));
  spec.layer_counts = {2048, 2048, 2048};
  spec.buffers = InputBuffers::kSharedOnRankZero;
  std::vector<std::string> lines;  // the sink runs under the logger's lock
  log::SetSinkForTesting([&lines](std::string_view line) { lines.emplace_back(line); });
  const TrainingResult result = RunTraining(spec);
  log::SetSinkForTesting(nullptr);
  ASSERT_EQ(result.failures, 0);
  EXPECT_EQ(result.hits, 0u);
  EXPECT_EQ(result.backward_mismatches, 0);
  EXPECT_EQ(result.nan_outputs, 0);
  // Caught by the pattern exchange itself, not only by rank 0's failed would-be reuses.
  const auto disagreement = std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("ranks saw different all-gather reuse patterns") != std::string::npos;
  });
  EXPECT_EQ(disagreement, 8) << "one WARN per rank";
}

TEST(HpzMisuseTest, ShardChangedBeforeAHitGivesNaNNotStaleWeights) {
  TrainingSpec spec = Spec(Config(false, true, false));
  spec.tamper_rank = 3;
  spec.tamper_step = 3;  // reuse is on from step 2
  spec.steps = 6;
  const TrainingResult result = RunTraining(spec);
  ASSERT_EQ(result.failures, 0);
  EXPECT_EQ(result.nan_outputs, 1);  // rank 3's backward gather of layer 0 in step 3
  EXPECT_GE(result.verify_failures, 1u);
  // Reuse goes off for good on every rank once the failure is agreed: the record of epoch 3 is
  // exchanged when epoch 4 starts and read when epoch 5 starts. Steps 2, 3, 4 hit; 5 does not.
  EXPECT_EQ(result.hits, 8u * 4u * 3u);
}

TEST(HpzMemoryTest, BoundDropsOldestPartitionsOnEveryRank) {
  TrainingSpec spec = Spec(Config(false, true, false));
  spec.layer_counts = {4096, 4096, 4096, 4096};
  // Room for two secondary partitions (2 nodes x 4096 x 2 bytes each, plus 16, rounded up to
  // the pool's 32 KiB class): the last two forward layers stay, the first two are dropped.
  spec.hpz_max_bytes = 2 * 32768;
  const TrainingResult result = RunTraining(spec);
  ASSERT_EQ(result.failures, 0);
  EXPECT_EQ(result.hits, 8u * 2u * 3u);  // two backward hits per step, steps 2..4, all ranks
  EXPECT_EQ(result.weight_rel_l2, 0.0);
}

}  // namespace
}  // namespace zpp::test
