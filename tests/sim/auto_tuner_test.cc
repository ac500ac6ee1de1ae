// ZPP_TUNE=auto's trials as the plugin runs them on GPUs (engine/auto_tuner.h): each call timed by
// two timing events on its stream, read back at the next step epoch, agreed by every rank, and
// the commit made to the candidate those times said was fastest, unless a table's step measured
// shorter. The sim's events keep an injected clock here (SimBackend::SetCallClockForTesting), and
// the tuner's step clock one priced the same plus what the calls cost the rest of the step, both
// by what each call enqueued, so that the measured winner is known and is not what the sim's wall
// clock would say.
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
  double per_kernel_outside = 0;  // what a kernel costs the step outside its call (shared cores)
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
// `epoch_stride`: how far the step epoch moves between two calls (more than 1: the communicator
// sat out epochs).
// `refuse_from`: from that step on (0: never), every device allocation and event creation fails
// (what the collective path must not need once each plan has run: the engine here has no
// reserved pool, and its buffers grow at a plan's first call).
std::vector<Outcome> RunTrials(const CallPrice& price, int trial_steps, Afterwards after = {},
                               uint64_t epoch_stride = 1, int refuse_from = 0) {
  sim::SimWorld world(kLayout);
  const plan::Settings settings = AllOn();
  const auto calibrated = CloseCall(settings);
  std::vector<Outcome> outcomes(world.world_size());
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    double slowdown = 1;
    auto priced = [&world, &backend, &slowdown, price, rank](double per_kernel) {
      const LaunchCounts launched = backend.launches();
      return slowdown * (per_kernel * static_cast<double>(launched.kernels) +
                         price.per_collective * static_cast<double>(launched.collectives) +
                         price.per_inter_node_byte *
                             static_cast<double>(world.SentBytes(rank, zppLinkInterNode)));
    };
    backend.SetCallClockForTesting([priced, price] { return priced(price.per_kernel); });
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
    tuner.SetStepClockForTesting(
        [priced, price] { return priced(price.per_kernel + price.per_kernel_outside); });
    ASSERT_EQ(tuner.Prepare(), ncclSuccess);
    std::vector<float> send(std::max(kCount, after.count), 1.0f), recv(send.size() * 4);
    int steps_run = 0;
    auto step = [&](size_t count) {
      const AllGatherArgs args{send.data(), recv.data(), count, ncclFloat32};
      ASSERT_EQ(tuner.AtCall(), ncclSuccess);
      ASSERT_EQ(tuner.Timed(CallOf(args), *stream,
                            [&](plan::Plan* ran) { return engine.AllGather(args, *stream, ran); }),
                ncclSuccess);
      epoch += epoch_stride;
      if (++steps_run == refuse_from) {
        backend.SetAllocationLimitForTesting(0);
        backend.SetEventCreationFailsForTesting(true);
      }
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

// The advances after every candidate ran once, through the trials, the commit and the drift's
// watch, allocate nothing on the device and make no event (docs/architecture.md, contract 3): a
// failure there would be one rank's alone.
TEST(AutoTunerTest, AdvancesMakeNothingOnTheCollectivePath) {
  const std::vector<Outcome> outcomes =
      RunTrials({1000, 10, 0}, StepsForEveryTrial(), {.steps = tune::kDriftEpochs + 2}, 1,
                CloseCall(AllOn())->table.Trials());
  for (const Outcome& outcome : outcomes) {
    EXPECT_EQ(outcome.committed.reason, zppReasonTuned);
    EXPECT_EQ(outcome.recalibrations, 0);
  }
}

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

// The calls' events say compression (the link dear, kernels cheap), but every kernel costs the
// rest of the step far more than the bytes it saves (codec work on the cores compute needs):
// the steps overrule the calls, and every rank commits to NCCL, expecting its trial's time.
TEST(AutoTunerTest, CommitsToTheShortestStepWhereTheCallsMislead) {
  const std::vector<Outcome> by_calls = RunTrials({1, 10, 1e-3}, StepsForEveryTrial());
  ASSERT_NE(by_calls[0].committed.kind, plan::PlanKind::kPassThrough) << "calls say compression";
  for (const Outcome& outcome : RunTrials({1, 10, 1e-3, 1e6}, StepsForEveryTrial())) {
    EXPECT_EQ(outcome.committed.kind, plan::PlanKind::kPassThrough);
    EXPECT_EQ(outcome.committed.reason, zppReasonTuned);
    EXPECT_GT(outcome.expected_us, 10);  // one collective and its bytes
  }
}

// A communicator that sat out epochs between its calls (an evaluation pass, a frozen block) times
// no step: the advance spans several. The calls decide alone, and compression is committed.
TEST(AutoTunerTest, AnAdvanceOverSeveralEpochsTimesNoStep) {
  for (const Outcome& outcome : RunTrials({1, 10, 1e-3, 1e6}, StepsForEveryTrial(), {}, 2)) {
    EXPECT_NE(outcome.committed.kind, plan::PlanKind::kPassThrough);
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
