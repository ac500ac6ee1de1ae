// Staging memory and contract 3: zpp allocates device memory only where the ranks agree on the
// outcome (communicator set-up, engine/pool_reservation.h), so a failed allocation on one rank
// and a call too big for the reservation both send every rank to NCCL's own collective together,
// never leaving peers waiting. Runs on a world whose rendezvous has a deadline: a rank that took
// another path than its peers would show as ncclRemoteError within seconds, not as a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "../topology/log_capture.h"
#include "engine/backend_byte_all_gather.h"
#include "engine/engine.h"
#include "engine/pool_reservation.h"
#include "engine_harness.h"
#include "log/log.h"
#include "sim/cluster_layout.h"
#include "sim/sim_backend.h"
#include "transport/in_process_transport.h"

namespace zpp::engine {
namespace {

using Clock = std::chrono::steady_clock;
// Long enough for a TSan build on two loaded cores (its 64 MiB reservations took over 1.5 s).
constexpr auto kDeadline = std::chrono::seconds(6);
constexpr auto kInTime = std::chrono::seconds(15);
constexpr int kNodes = 2;
constexpr int kPerNode = 2;
constexpr int kRanks = kNodes * kPerNode;
constexpr size_t kCount = 4096;  // elements per rank

// The WARN lines containing `text` (the sink runs under the logger's lock: ranks may log at once).
int WarnsContaining(const topology::test_support::LogCapture& log, std::string_view text) {
  const std::vector<std::string> warns = log.At("WARN");
  return static_cast<int>(std::count_if(warns.begin(), warns.end(), [&](const std::string& line) {
    return line.find(text) != std::string::npos;
  }));
}

plan::Shape TwoByTwo() {
  plan::Shape shape;
  shape.world = kRanks;
  shape.nodes = kNodes;
  shape.min_local_size = kPerNode;
  shape.hierarchical_allowed = true;
  return shape;
}

float InputOf(int rank, size_t i) { return static_cast<float>(rank * 1000 + i % 997) * 0.25f; }

// What each rank saw of one collective.
struct Call {
  plan::Plan plan;
  Result result = ncclSuccess;
  std::vector<float> output;
};

struct PoolRun {
  std::vector<std::vector<Call>> calls;  // [rank][call]
  std::vector<size_t> capacity;          // per rank, the pool's
  zppStats_t stats{};                    // all ranks together
  Clock::duration took{};
};

// Every rank reserves `pool_bytes` (rank `failing` cannot: its device is full), then makes
// `calls` all-gathers (or reduce-scatters) of kCount fp32 elements per rank, in epochs of
// `per_epoch` calls. With `no_allocation_after_setup`, every device allocation after the
// reservation fails, as a full device's would.
struct PoolSpec {
  plan::Settings settings;
  uint64_t pool_bytes = uint64_t{64} << 20;
  int failing = -1;
  bool reduce_scatter = false;
  std::vector<size_t> counts = {kCount};  // per call, elements per rank
  int per_epoch = 1 << 30;
  // Gathers from this place in their epoch on are a backward pass's, the ones before forward.
  int backward_from = 1 << 30;
  bool no_allocation_after_setup = false;
};

PoolRun RunPool(const PoolSpec& spec) {
  PoolRun run;
  StatsCounters stats;
  run.calls.resize(kRanks);
  run.capacity.resize(kRanks);
  sim::SimWorld world(sim::ClusterLayout::Uniform(kNodes, kPerNode), /*local_rank=*/-1,
                      std::make_shared<transport::InProcessTransport>(kDeadline));
  const Clock::time_point start = Clock::now();
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    if (rank == spec.failing) backend.SetAllocationLimitForTesting(spec.pool_bytes - 1);
    BackendByteAllGather exchange(backend, *stream);
    std::unique_ptr<BufferPool> pool;
    ASSERT_EQ(ReserveStagingPool(backend, exchange, spec.pool_bytes, true, &pool), ncclSuccess);
    run.capacity[rank] = pool->capacity();
    if (spec.no_allocation_after_setup) backend.SetAllocationLimitForTesting(0);
    int call_index = 0;
    EngineOptions options;
    options.settings = spec.settings;
    options.epoch = [&] { return static_cast<uint64_t>(call_index / spec.per_epoch); };
    Engine engine(backend, TwoByTwo(), options, stats, std::move(pool));
    for (; call_index < static_cast<int>(spec.counts.size()); ++call_index) {
      const size_t count = spec.counts[call_index];
      const size_t in_count = spec.reduce_scatter ? count * kRanks : count;
      const size_t out_count = spec.reduce_scatter ? count : count * kRanks;
      std::vector<float> input(in_count);
      for (size_t i = 0; i < in_count; ++i) input[i] = InputOf(rank, i);
      Call call;
      call.output.assign(out_count, -1.0f);
      if (spec.reduce_scatter) {
        call.result = engine.ReduceScatter(
            {input.data(), call.output.data(), count, ncclFloat32, plan::Reduction::kSum}, *stream,
            &call.plan);
      } else {
        const TrainingPass pass = call_index % spec.per_epoch >= spec.backward_from
                                      ? TrainingPass::kBackward
                                      : TrainingPass::kForward;
        call.result = engine.AllGather({input.data(), call.output.data(), count, ncclFloat32, pass},
                                       *stream, &call.plan);
      }
      backend.Synchronize(*stream);
      if (backend.AsyncError() != ncclSuccess) call.result = backend.AsyncError();
      run.calls[rank].push_back(std::move(call));
    }
  });
  run.took = Clock::now() - start;
  stats.Snapshot(&run.stats);
  return run;
}

// NCCL's all-gather of InputOf: bitwise, as a pass-through must be.
void ExpectNcclAllGather(const Call& call, size_t count) {
  ASSERT_EQ(call.output.size(), count * kRanks);
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(call.output[r * count + i], InputOf(r, i));
  }
}

int Passed(const zppStats_t& stats, zppPassThroughReason_t reason) {
  return static_cast<int>(stats.passthrough[reason]);
}

TEST(PoolFallbackTest, OneRankFailingToReserveSendsEveryRankToNcclTogether) {
  topology::test_support::LogCapture log;
  PoolSpec spec;
  spec.settings =
      test::TechniquesOn(true, true, true);  // hierarchical qwZ + hpZ: sub-group collectives
  spec.failing = 3;
  spec.counts = {kCount, kCount, kCount};
  const PoolRun run = RunPool(spec);
  EXPECT_LT(run.took, kInTime);
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(run.capacity[rank], 0u) << "rank " << rank << " kept its reservation alone";
    for (const Call& call : run.calls[rank]) {
      EXPECT_EQ(call.result, ncclSuccess) << "rank " << rank;
      EXPECT_EQ(call.plan.kind, plan::PlanKind::kPassThrough) << "rank " << rank;
      EXPECT_EQ(call.plan.reason, zppReasonPool) << "rank " << rank;
      ExpectNcclAllGather(call, kCount);
    }
  }
  EXPECT_EQ(Passed(run.stats, zppReasonPool), kRanks * 3);
  EXPECT_EQ(WarnsContaining(log, "ZPP_POOL_MB"), 2 * kRanks);  // set-up and first call, every rank
  EXPECT_EQ(WarnsContaining(log, "rank 3 failed"), kRanks);
}

TEST(PoolFallbackTest, OneRankFailingToReserveReduceScatterToo) {
  topology::test_support::LogCapture log;
  PoolSpec spec;
  spec.settings = test::TechniquesOn(false, false, true);  // hierarchical qgZ
  spec.failing = 0;
  spec.reduce_scatter = true;
  const PoolRun run = RunPool(spec);
  EXPECT_LT(run.took, kInTime);
  for (int rank = 0; rank < kRanks; ++rank) {
    const Call& call = run.calls[rank][0];
    EXPECT_EQ(call.result, ncclSuccess);
    EXPECT_EQ(call.plan.reason, zppReasonPool);
    for (size_t i = 0; i < kCount; ++i) {  // NCCL's sum, exact for these values
      float sum = 0;
      for (int r = 0; r < kRanks; ++r) sum += InputOf(r, rank * kCount + i);
      ASSERT_FLOAT_EQ(call.output[i], sum);
    }
  }
}

// A call whose buffers do not fit the agreed reservation passes through on every rank, and the
// calls that fit still run zpp's plans: the decision follows sizes and capacity alone.
TEST(PoolFallbackTest, CallTooBigForThePoolPassesThroughOnEveryRank) {
  topology::test_support::LogCapture log;
  for (const plan::Settings& settings :
       {test::TechniquesOn(true, false, false), test::TechniquesOn(true, true, false)}) {
    PoolSpec spec;
    spec.settings = settings;
    spec.pool_bytes = 256 << 10;  // 256 KiB
    spec.counts = {kCount, 64 * kCount, kCount};
    const PoolRun run = RunPool(spec);
    EXPECT_LT(run.took, kInTime);
    for (int rank = 0; rank < kRanks; ++rank) {
      const std::vector<Call>& calls = run.calls[rank];
      for (const Call& call : calls) EXPECT_EQ(call.result, ncclSuccess);
      EXPECT_NE(calls[0].plan.kind, plan::PlanKind::kPassThrough);
      EXPECT_EQ(calls[1].plan.kind, plan::PlanKind::kPassThrough);
      EXPECT_EQ(calls[1].plan.reason, zppReasonPool);
      ExpectNcclAllGather(calls[1], 64 * kCount);
      EXPECT_NE(calls[2].plan.kind, plan::PlanKind::kPassThrough);
    }
    EXPECT_EQ(Passed(run.stats, zppReasonPool), kRanks);
    // hpZ counts the two calls its plans ran (single epoch: fills), not the one passed through.
    EXPECT_EQ(run.stats.hpz_misses, settings.hpz ? 2u * kRanks : 0u);
    EXPECT_EQ(run.stats.hpz_hits, 0u);
  }
  EXPECT_EQ(WarnsContaining(log, "ZPP_POOL_MB"), 2 * kRanks);  // once per communicator (engine)
}

// hpZ counts a call as a hit or a fill only when its plan ran: at any capacity, the hits and
// misses are the calls that did not pass through (a refused hit's or fill's buffer passes the call
// through on every rank, and it used to be counted all the same). And a refusal in the call that
// starts an epoch, after the epoch's record exchange, passes through too (it used to fail the
// call with ncclInternalError: the exchange counted as the plan's first collective).
TEST(PoolFallbackTest, HpzCountsOnlyTheCallsItsPlansRan) {
  int refused_somewhere = 0;
  for (uint64_t kib = 64; kib <= 512; kib += 32) {
    PoolSpec spec;
    spec.settings = test::TechniquesOn(false, true, false);
    spec.pool_bytes = kib << 10;
    spec.counts.assign(4 * 4, kCount);  // four epochs of two forward and two backward gathers
    spec.per_epoch = 4;
    spec.backward_from = 2;
    const PoolRun run = RunPool(spec);
    uint64_t planned = 0;
    for (int rank = 0; rank < kRanks; ++rank) {
      for (const Call& call : run.calls[rank]) {
        ASSERT_EQ(call.result, ncclSuccess) << kib << " KiB";
        planned += call.plan.kind != plan::PlanKind::kPassThrough;
      }
    }
    // Some capacities refuse the hits' send buffers after the fills ran (128 and 160 KiB here).
    refused_somewhere += Passed(run.stats, zppReasonPool) > 0 && run.stats.hpz_misses > 0;
    EXPECT_EQ(run.stats.hpz_hits + run.stats.hpz_misses, planned) << kib << " KiB";
  }
  EXPECT_GT(refused_somewhere, 0) << "no capacity refused some of hpZ's calls and ran others";
}

// Set-up reserves only where a plan can use it: with every technique off (zpp preloaded for its
// stats), settings the ranks disagree on, one rank, or techniques whose plans this shape cannot
// run, every call passes through, and ZPP_POOL_MB of device memory would be taken from the
// framework for nothing (a large job has dozens of such communicators).
TEST(PoolReservationTest, ReservedOnlyWhereAPlanCanRun) {
  constexpr uint64_t kPool = uint64_t{2048} << 20;
  const plan::Shape two_by_two = sim::ShapeOf(sim::ClusterLayout::Uniform(2, 2));
  const plan::Shape one_node = sim::ShapeOf(sim::ClusterLayout::Uniform(1, 4));
  const plan::Shape one_per_node = sim::ShapeOf(sim::ClusterLayout::Uniform(4, 1));
  const plan::Shape one_rank = sim::ShapeOf(sim::ClusterLayout::Uniform(1, 1));
  plan::Shape disagreed = two_by_two;
  disagreed.config_agreed = false;
  // 2 nodes of 8, interleaved: no hierarchy, and a flat int4 qgZ would send 8 pieces off the
  // node where NCCL's ring sends one chunk: it passes through (topology).
  sim::ClusterLayout interleaved;
  for (int rank = 0; rank < 16; ++rank) interleaved.node_of_rank.push_back(rank % 2);
  interleaved.rack_of_node = {0, 0};
  const plan::Shape flat_16 = sim::ShapeOf(interleaved);
  ASSERT_FALSE(flat_16.hierarchical_allowed);

  const plan::Settings off = test::TechniquesOn(false, false, false);
  const plan::Settings qwz = test::TechniquesOn(true, false, false);
  const plan::Settings hpz = test::TechniquesOn(false, true, false);
  const plan::Settings qgz = test::TechniquesOn(false, false, true);
  const plan::Settings all = test::TechniquesOn(true, true, true);
  plan::Settings qwz_forced = qwz;  // ZPP_LOSSY_ONE_NODE=1
  qwz_forced.lossy_on_one_node = true;
  struct Case {
    const char* what;
    plan::Settings settings;
    plan::Shape shape;
    uint64_t reserved;
  };
  for (const Case& c :
       std::vector<Case>{{"every technique off", off, two_by_two, 0},
                         {"settings disagreed", all, disagreed, 0},
                         {"one rank", all, one_rank, 0},
                         {"hpZ alone on one node", hpz, one_node, 0},
                         {"hpZ alone, one rank per node", hpz, one_per_node, 0},
                         {"qgZ alone, flat, more off-node than the ring", qgz, flat_16, 0},
                         {"hpZ on a hierarchy", hpz, two_by_two, kPool},
                         {"qwZ on one node (it would only add error)", qwz, one_node, 0},
                         {"qwZ flat on one node, forced", qwz_forced, one_node, kPool},
                         {"qgZ on a hierarchy", qgz, two_by_two, kPool},
                         {"qgZ flat, one rank per node", qgz, one_per_node, kPool},
                         {"everything on a hierarchy", all, two_by_two, kPool}}) {
    EXPECT_EQ(StagingReservationBytes(c.settings, c.shape, kPool), c.reserved) << c.what;
  }
}

// Within capacity nothing is allocated on the collective path: every device allocation after
// the reservation fails here, and zpp's plans still run, hpZ hits over several epochs included.
TEST(PoolFallbackTest, WithinCapacityPlansRunWithoutAllocating) {
  PoolSpec spec;
  spec.settings = test::TechniquesOn(true, true, false);
  spec.no_allocation_after_setup = true;
  // Five epochs of two forward and two backward gathers of one shard: the backward ones hit.
  spec.counts.assign(5 * 4, kCount);
  spec.per_epoch = 4;
  spec.backward_from = 2;
  const PoolRun run = RunPool(spec);
  for (int rank = 0; rank < kRanks; ++rank) {
    for (const Call& call : run.calls[rank]) {
      EXPECT_EQ(call.result, ncclSuccess);
      EXPECT_NE(call.plan.kind, plan::PlanKind::kPassThrough);
    }
  }
  EXPECT_EQ(Passed(run.stats, zppReasonPool), 0);
  EXPECT_GT(run.stats.hpz_hits, 0u);

  PoolSpec qgz;
  qgz.settings = test::TechniquesOn(false, false, true);
  qgz.reduce_scatter = true;
  qgz.no_allocation_after_setup = true;
  qgz.counts = {kCount, kCount};
  const PoolRun reduced = RunPool(qgz);
  for (int rank = 0; rank < kRanks; ++rank) {
    for (const Call& call : reduced.calls[rank]) {
      EXPECT_EQ(call.result, ncclSuccess);
      EXPECT_EQ(call.plan.kind, plan::PlanKind::kQgzHierarchicalReduceScatter);
    }
  }
}

}  // namespace
}  // namespace zpp::engine
