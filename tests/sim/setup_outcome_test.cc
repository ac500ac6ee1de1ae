// One rank's set-up failure is every rank's fallback: after a stage that failed on one rank
// only, every rank learns it from the same exchange, so no rank goes on to a collective (a
// sub-communicator split) that the failed one will never join.
#include "topology/setup_outcome.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "engine/backend_byte_all_gather.h"
#include "sim/sim_backend.h"

namespace zpp::topology {
namespace {

struct ChainRun {
  std::vector<SetUpOutcome> outcomes;
  int went_on = 0;  // ranks that started the next collective stage
};

// Every rank runs a local stage (failing where `fails` says), agrees on the outcome, and goes on
// to the next collective only when all succeeded; that collective is a real one of the sim, so
// a rank that went on alone would wait there (bounded by the test's timeout).
ChainRun RunChain(int nodes, int per_node, const std::vector<int>& fails) {
  ChainRun run;
  std::atomic<int> went_on{0};
  sim::SimWorld world(sim::ClusterLayout::Uniform(nodes, per_node));
  run.outcomes.resize(world.world_size());
  world.RunRanks([&](sim::SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    BackendByteAllGather exchange(backend, *stream);
    bool ok = true;
    for (int rank : fails) ok = ok && rank != backend.rank();
    SetUpOutcome& outcome = run.outcomes[backend.rank()];
    ASSERT_EQ(AgreeOnOutcome(exchange, ok, &outcome), ncclSuccess);
    if (!outcome.all_ok) return;
    ++went_on;
    const std::byte mine{1};
    std::vector<std::byte> all(backend.world_size());
    ASSERT_EQ(exchange.AllGather(std::span(&mine, 1), all), ncclSuccess);
  });
  run.went_on = went_on.load();
  return run;
}

TEST(SetUpOutcomeTest, OneRankFailingMakesEveryRankFallBack) {
  const ChainRun run = RunChain(2, 4, {2});
  EXPECT_EQ(run.went_on, 0);
  for (const SetUpOutcome& outcome : run.outcomes) {
    EXPECT_FALSE(outcome.all_ok);
    EXPECT_EQ(outcome.failed_ranks, std::vector<int>{2});
    EXPECT_EQ(outcome.Describe(), "rank 2 failed");
  }
}

TEST(SetUpOutcomeTest, SeveralFailuresAreNamedInRankOrder) {
  const ChainRun run = RunChain(2, 2, {3, 0});
  EXPECT_EQ(run.went_on, 0);
  for (const SetUpOutcome& outcome : run.outcomes) {
    EXPECT_EQ(outcome.Describe(), "ranks 0, 3 failed");
  }
}

TEST(SetUpOutcomeTest, AllSucceedingGoOnTogether) {
  const ChainRun run = RunChain(2, 2, {});
  EXPECT_EQ(run.went_on, 4);
  for (const SetUpOutcome& outcome : run.outcomes) EXPECT_TRUE(outcome.all_ok);
}

}  // namespace
}  // namespace zpp::topology
