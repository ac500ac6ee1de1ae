// ZPP_TUNE=auto's trials as the plugin runs them on GPUs (engine/auto_tuner.h): each call timed by
// two timing events on its stream, read back at the next step epoch, agreed by every rank, and
// the commit made to the candidate those times said was fastest. The sim's events keep an
// injected clock here (SimBackend::SetCallClockForTesting), priced by what each call enqueued,
// so that the measured winner is known and is not what the sim's wall clock would say.
#include "engine/auto_tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_harness.h"
#include "sim/sim_backend.h"
#include "sim/sim_world.h"

namespace zpp::engine {
namespace {

const sim::ClusterLayout kLayout = sim::ClusterLayout::Uniform(2, 2);

// What a call costs on the injected clock, in microseconds: per kernel, per collective, and per
// byte this rank sent across nodes.
struct CallPrice {
  double per_kernel = 0;
  double per_collective = 0;
  double per_inter_node_byte = 0;
};

// A link and codecs of about the same speed: the model shortlists more than one candidate.
std::shared_ptr<const tune::Tuning> CloseCall(const plan::Settings& settings) {
  auto tuning = std::make_shared<tune::Tuning>();
  tuning->model = costmodel::DefaultModel(2, 2, 20, 8);
  tuning->model.kernels = {2, 2, 2, 20};
  tuning->table =
      tune::DecisionTable::Build(tuning->model, plan::Shape(sim::ShapeOf(kLayout)), settings);
  return tuning;
}

plan::Settings AllOn() {
  plan::Settings s = test::TechniquesOn(true, true, true);
  s.min_bytes = 0;
  return s;
}

constexpr size_t kCount = size_t{1} << 20;  // floats a rank: 4 MiB in, 16 MiB gathered

struct Outcome {
  plan::Plan committed;    // what the call is planned as once the trials committed
  double expected_us = 0;  // the committed table's time for it
  int recalibrations = 0;  // after the trials, by drift
};

// After the trials: `steps` epochs of one all-gather of `count` floats a rank each, every call
// priced `slowdown` times the injected clock (on `slow_rank` only, where one is named).
struct Afterwards {
  size_t count = kCount;
  int steps = 0;
  double slowdown = 1;
  int slow_rank = -1;
};

// Every rank runs one all-gather of kCount floats per step epoch through the tuner, on the
// injected clock `price`, for `trial_steps` epochs, then `after`; each rank's outcome.
std::vector<Outcome> RunTrials(const CallPrice& price, int trial_steps, Afterwards after = {}) {
  sim::SimWorld world(kLayout);
  const plan::Settings settings = AllOn();
  const auto calibrated = CloseCall(settings);
  std::vector<Outcome> outcomes(world.world_size());
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    double slowdown = 1;
    backend.SetCallClockForTesting([&world, &backend, &slowdown, price, rank] {
      const LaunchCounts launched = backend.launches();
      return slowdown * (price.per_kernel * static_cast<double>(launched.kernels) +
                         price.per_collective * static_cast<double>(launched.collectives) +
                         price.per_inter_node_byte *
                             static_cast<double>(world.SentBytes(rank, zppLinkInterNode)));
    });
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    StatsCounters stats;
    EngineOptions options;
    options.settings = settings;
    uint64_t epoch = 0;
    options.epoch = [&epoch] { return epoch; };
    options.tuning = calibrated;
    Engine engine(backend, sim::ShapeOf(kLayout), options, stats);
    AutoTuner tuner(backend, *stream, engine, stats, options);
    ASSERT_EQ(tuner.Prepare(), ncclSuccess);
    std::vector<float> send(std::max(kCount, after.count), 1.0f), recv(send.size() * 4);
    auto step = [&](size_t count) {
      const AllGatherArgs args{send.data(), recv.data(), count, ncclFloat32};
      ASSERT_EQ(tuner.AtCall(), ncclSuccess);
      ASSERT_EQ(tuner.Timed(CallOf(args), *stream,
                            [&](plan::Plan* ran) { return engine.AllGather(args, *stream, ran); }),
                ncclSuccess);
      ++epoch;
    };
    for (int s = 0; s < trial_steps; ++s) step(kCount);
    const AllGatherArgs args{send.data(), recv.data(), kCount, ncclFloat32};
    outcomes[rank].committed = engine.Decide(CallOf(args));
    outcomes[rank].expected_us = engine.tuning()->table.ExpectedUs(CallOf(args));
    if (after.slow_rank < 0 || after.slow_rank == rank) slowdown = after.slowdown;
    for (int s = 0; s < after.steps; ++s) step(after.count);
    ASSERT_EQ(tuner.AtCall(), ncclSuccess);  // the last epoch's read-back
    backend.Synchronize(*stream);
    outcomes[rank].recalibrations = tuner.recalibrations();
  });
  return outcomes;
}

int StepsForEveryTrial() { return tune::kEpochsPerTrial * CloseCall(AllOn())->table.Trials() + 1; }

// Kernels priced far above collectives: every rank commits to NCCL's call, and keeps as its
// expected time exactly what the injected clock gave the plain call (one collective).
TEST(AutoTunerTest, CommitsToNcclWhereTheEventsTimedKernelsDear) {
  ASSERT_GT(CloseCall(AllOn())->table.Trials(), 1) << "the test needs a shortlist";
  for (const Outcome& outcome : RunTrials({1000, 10, 0}, StepsForEveryTrial())) {
    EXPECT_EQ(outcome.committed.kind, plan::PlanKind::kPassThrough);
    EXPECT_EQ(outcome.committed.reason, zppReasonTuned);
    EXPECT_DOUBLE_EQ(outcome.expected_us, 10);
  }
}

// Bytes across nodes priced and kernels cheap (the sim's wall clock would say the opposite):
// every rank commits to the same compressed plan.
TEST(AutoTunerTest, CommitsToCompressionWhereTheEventsTimedTheLinkDear) {
  const std::vector<Outcome> outcomes = RunTrials({1, 10, 1e-3}, StepsForEveryTrial());
  for (const Outcome& outcome : outcomes) {
    EXPECT_NE(outcome.committed.kind, plan::PlanKind::kPassThrough);
    EXPECT_LT(outcome.committed.off_node_bytes, outcome.committed.plain_off_node_bytes);
    EXPECT_EQ(outcome.committed.kind, outcomes[0].committed.kind);
    EXPECT_EQ(outcome.expected_us, outcomes[0].expected_us);
  }
}

// Calls of an entry the trials never measured (a size that first came after the commit) have only
// the model's time: a model far off for them is not drift, and nothing is recalibrated.
TEST(AutoTunerTest, CallsTheTrialsNeverMeasuredAreNotDrift) {
  const Afterwards unmeasured{
      .count = 2 * kCount, .steps = tune::kDriftEpochs + 2, .slowdown = 1e6};
  ASSERT_NE(CloseCall(AllOn())->table.EntryOf({plan::CollectiveOp::kAllGather, kCount}),
            CloseCall(AllOn())->table.EntryOf({plan::CollectiveOp::kAllGather, unmeasured.count}));
  for (const Outcome& outcome : RunTrials({1, 10, 1e-3}, StepsForEveryTrial(), unmeasured)) {
    EXPECT_EQ(outcome.recalibrations, 0);
  }
}

// One rank's calls took 3x what the trials measured (it waited for later peers): the ranks agree
// on their mean, and one rank's wait is not the link drifting.
TEST(AutoTunerTest, OneRanksWaitIsNotDrift) {
  const Afterwards waited{
      .count = kCount, .steps = 4 * tune::kDriftEpochs, .slowdown = 3, .slow_rank = 0};
  for (const Outcome& outcome : RunTrials({1, 10, 1e-3}, StepsForEveryTrial(), waited)) {
    EXPECT_EQ(outcome.recalibrations, 0);
  }
}

// The measured entry's calls slowed far beyond 2x for kDriftEpochs epochs: every rank recalibrates.
TEST(AutoTunerTest, MeasuredCallsFarOffTheirTrialsRecalibrate) {
  const Afterwards slower{.count = kCount, .steps = tune::kDriftEpochs + 1, .slowdown = 100};
  for (const Outcome& outcome : RunTrials({1, 10, 1e-3}, StepsForEveryTrial(), slower)) {
    EXPECT_EQ(outcome.recalibrations, 1);
  }
}

}  // namespace
}  // namespace zpp::engine
