// Error feedback for the compressed all-reduce (ZPP_QAR_EF, issue 28) on the simulated cluster:
// what a step's two inter-node quantizations lost reaches the same call in the next step and
// nowhere else, and the replicas stay bitwise identical while it does.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "sim/cluster_layout.h"
#include "sim/sim_backend.h"
#include "sim/sim_world.h"
#include "stats/stats.h"
#include "transport/in_process_transport.h"

namespace zpp::engine {
namespace {

constexpr int kNodes = 2;
constexpr int kPerNode = 2;
constexpr int kRanks = kNodes * kPerNode;

// What a rank contributes: smooth and different per rank, so every block's scale is its own.
float InputOf(int rank, size_t i) {
  return std::sin(0.37f * static_cast<float>(i) + static_cast<float>(rank)) * (1.0f + 0.1f * rank);
}

struct Steps {
  std::vector<size_t> counts;  // the all-reduces, in call order, one per step
  bool feedback = true;
  int bits = 4;
};

// outputs[rank][call]: every call's output on every rank.
std::vector<std::vector<std::vector<float>>> RunSteps(const Steps& steps,
                                                      zppStats_t* stats_out = nullptr) {
  std::vector<std::vector<std::vector<float>>> outputs(kRanks);
  StatsCounters stats;
  sim::SimWorld world(sim::ClusterLayout::Uniform(kNodes, kPerNode), /*local_rank=*/-1,
                      std::make_shared<transport::InProcessTransport>(std::chrono::seconds(60)));
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    size_t call = 0;
    EngineOptions options;
    options.settings.qar = true;
    options.settings.qar_bits = steps.bits;
    options.settings.qar_ef = steps.feedback;
    options.settings.min_bytes = 0;
    options.epoch = [&] { return static_cast<uint64_t>(call); };
    Engine engine(backend, sim::ShapeOf(world.layout()), options, stats);
    ASSERT_EQ(engine.Prepare(), ncclSuccess);
    for (; call < steps.counts.size(); ++call) {
      const size_t count = steps.counts[call];
      std::vector<float> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = InputOf(rank, i);
      plan::Plan ran;
      ASSERT_EQ(
          engine.AllReduce({data.data(), data.data(), count, ncclFloat32, plan::Reduction::kAvg},
                           *stream, &ran),
          ncclSuccess);
      ASSERT_EQ(ran.kind, plan::PlanKind::kQarHierarchicalAllReduce);
      backend.Synchronize(*stream);
      outputs[rank].push_back(std::move(data));
    }
  });
  if (stats_out != nullptr) stats.Snapshot(stats_out);
  return outputs;
}

double Exact(size_t i) {
  double sum = 0;
  for (int r = 0; r < kRanks; ++r) sum += InputOf(r, i);
  return sum / kRanks;
}

// The relative L2 error of rank 0's mean over calls [first, last) (all of one count).
double ErrorOfMean(const std::vector<std::vector<std::vector<float>>>& outputs, size_t first,
                   size_t last) {
  const size_t count = outputs[0][first].size();
  double err = 0, ref = 0;
  for (size_t i = 0; i < count; ++i) {
    double mean = 0;
    for (size_t call = first; call < last; ++call) mean += outputs[0][call][i];
    mean /= static_cast<double>(last - first);
    err += (mean - Exact(i)) * (mean - Exact(i));
    ref += Exact(i) * Exact(i);
  }
  return std::sqrt(err / ref);
}

void ExpectReplicasIdentical(const std::vector<std::vector<std::vector<float>>>& outputs) {
  for (int rank = 1; rank < kRanks; ++rank) {
    for (size_t call = 0; call < outputs[0].size(); ++call) {
      EXPECT_EQ(outputs[rank][call], outputs[0][call]) << "rank " << rank << " call " << call;
    }
  }
}

// The same gradient every step: without feedback every step errs the same way; with it, what
// one step lost the next adds back, so the K steps' outputs sum to K exact averages but for the
// first step's residuals (none) and the last's (kept): the mean errs at most about two steps'
// error over K. A residual added to the wrong elements breaks the telescoping sum.
TEST(AllReduceFeedbackTest, TheMeanOverStepsLosesTheBias) {
  constexpr size_t kCount = 8192;
  constexpr int kSteps = 32;
  Steps with;
  with.counts.assign(kSteps, kCount);
  Steps without = with;
  without.feedback = false;
  zppStats_t stats{};
  const auto fed = RunSteps(with, &stats);
  const auto plain = RunSteps(without);
  ExpectReplicasIdentical(fed);
  const double fed_error = ErrorOfMean(fed, 0, kSteps);
  const double plain_error = ErrorOfMean(plain, 0, kSteps);
  RecordProperty("rel_l2_of_mean_without", std::to_string(plain_error));
  RecordProperty("rel_l2_of_mean_with", std::to_string(fed_error));
  // A single step is a normal int4 all-reduce (the first has nothing to add back).
  const double step_error = ErrorOfMean(fed, 0, 1);
  EXPECT_LT(step_error, 0.25);
  EXPECT_LT(fed_error, 2 * step_error / kSteps)
      << "without " << plain_error << ", one step " << step_error;
  EXPECT_LT(fed_error, plain_error / 10);
  EXPECT_EQ(stats.qgz_ef_calls, uint64_t{kSteps} * kRanks);
  EXPECT_EQ(stats.qgz_ef_without, 0u);
}

// DDP rebuilds its buckets after the first step: a call at a place whose count changed starts
// afresh, exactly as if nothing had been kept, and the replicas stay identical through it.
TEST(AllReduceFeedbackTest, ARebuiltPatternStartsAfresh) {
  Steps rebuilt;
  rebuilt.counts = {6000, 4096};  // the first step's bucket, then the rebuilt one
  Steps fresh;
  fresh.counts = {4096};
  const auto after_rebuild = RunSteps(rebuilt);
  const auto first = RunSteps(fresh);
  ExpectReplicasIdentical(after_rebuild);
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(after_rebuild[rank][1], first[rank][0])
        << "rank " << rank << ": a residual of another call was added after the rebuild";
  }
}

}  // namespace
}  // namespace zpp::engine
