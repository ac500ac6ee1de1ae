#include "engine/config_agreement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "engine/engine.h"
#include "log/log.h"
#include "sim/sim_backend.h"

namespace zpp::engine {
namespace {

using ::testing::HasSubstr;

struct AgreementRun {
  std::vector<ConfigAgreement> per_rank;
  std::vector<std::string> warnings;
};

AgreementRun Agree(const std::function<void(int rank, Config&)>& configure) {
  AgreementRun run;
  std::mutex mutex;
  log::SetSinkForTesting([&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex);
    run.warnings.emplace_back(line);
  });
  sim::SimWorld world(sim::ClusterLayout::Uniform(2, 2));
  run.per_rank.resize(world.world_size());
  world.RunRanks([&](sim::SimBackend& backend) {
    Config config;
    configure(backend.rank(), config);
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    ASSERT_EQ(AgreeOnConfiguration(backend, *stream, config, &run.per_rank[backend.rank()]),
              ncclSuccess);
  });
  log::SetSinkForTesting(nullptr);
  return run;
}

TEST(ConfigAgreementTest, SameSettingsAgree) {
  const AgreementRun run = Agree([](int, Config& c) { c.qwz = 1; });
  for (const ConfigAgreement& a : run.per_rank) EXPECT_TRUE(a.agreed);
  EXPECT_TRUE(run.warnings.empty());
}

TEST(ConfigAgreementTest, OneRankDifferingMakesEveryRankFallBackAndNamesTheVariable) {
  const AgreementRun run = Agree([](int rank, Config& c) {
    c.qwz = 1;
    if (rank == 3) c.qwz_bits = 4;
  });
  for (const ConfigAgreement& a : run.per_rank) {
    EXPECT_FALSE(a.agreed);
    EXPECT_EQ(a.first_difference, "ZPP_QWZ_BITS (rank 0: 8, rank 3: 4)");
  }
  ASSERT_EQ(run.warnings.size(), 4u);  // one per rank
  EXPECT_THAT(run.warnings[0], HasSubstr("ZPP_QWZ_BITS"));
  EXPECT_THAT(run.warnings[0], HasSubstr("plain NCCL"));
}

// Settings that change no byte on the wire but still what a call does: on one node, quantize or
// pass through (the ranks would take different paths and hang); residuals kept or not, and
// refused past different bounds.
TEST(ConfigAgreementTest, FeedbackAndOneNodeSettingsAreComparedToo) {
  const std::vector<std::pair<std::string, std::function<void(Config&)>>> cases = {
      {"ZPP_LOSSY_ONE_NODE (rank 0: 0, rank 2: 1)", [](Config& c) { c.lossy_one_node = 1; }},
      {"ZPP_QGZ_EF (rank 0: 0, rank 2: 1)", [](Config& c) { c.qgz_ef = 1; }},
      {"ZPP_EF_MAX_MB (rank 0: 256, rank 2: 16)", [](Config& c) { c.ef_max_mb = 16; }},
  };
  for (const auto& [difference, change] : cases) {
    const AgreementRun run = Agree([&](int rank, Config& c) {
      c.qgz = 1;
      if (rank == 2) change(c);
    });
    for (const ConfigAgreement& a : run.per_rank) {
      EXPECT_FALSE(a.agreed);
      EXPECT_EQ(a.first_difference, difference);
    }
  }
}

// Runs `use` with an engine made as a communicator makes it: after the configuration agreement.
template <typename Use>
void WithAgreedEngine(sim::SimBackend& backend, const sim::SimWorld& world, const Config& config,
                      Use use) {
  std::unique_ptr<Stream> stream;
  ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
  ConfigAgreement agreement;
  ASSERT_EQ(AgreeOnConfiguration(backend, *stream, config, &agreement), ncclSuccess);
  plan::Shape shape = sim::ShapeOf(world.layout());
  shape.config_agreed = agreement.agreed;
  StatsCounters stats;
  Engine engine(backend, shape, OptionsFrom(config), stats);
  use(engine, *stream);
}

TEST(ConfigAgreementTest, DisagreeingCommunicatorPassesEverythingThrough) {
  // What the plugin does with the outcome: the shape says so and the planner passes through.
  sim::SimWorld world(sim::ClusterLayout::Uniform(2, 2));
  std::atomic<int> passed_through{0};
  world.RunRanks([&](sim::SimBackend& backend) {
    Config config;
    config.qwz = 1;
    config.min_bytes = 0;
    if (backend.rank() == 1) config.block = 128;
    WithAgreedEngine(backend, world, config, [&](Engine& engine, Stream& stream) {
      std::vector<float> in(1000, 1.0f), out(4000);
      plan::Plan plan;
      ASSERT_EQ(engine.AllGather({in.data(), out.data(), in.size(), ncclFloat32}, stream, &plan),
                ncclSuccess);
      backend.Synchronize(stream);
      if (plan.reason == zppReasonConfigMismatch) ++passed_through;
    });
  });
  EXPECT_EQ(passed_through.load(), 4);
}

// A rank whose ZPP_HPZ differs: no rank's engine runs hpZ, so hpZ's step guard (which joins an
// all-reduce wherever some communicator runs hpZ) is off on every rank alike, never on some.
TEST(ConfigAgreementTest, HpzRunsOnNoRankWhenOneRankDiffers) {
  sim::SimWorld world(sim::ClusterLayout::Uniform(2, 2));
  std::atomic<int> running{0};
  world.RunRanks([&](sim::SimBackend& backend) {
    Config config;
    config.hpz = backend.rank() == 2 ? 0 : 1;
    WithAgreedEngine(backend, world, config, [&](Engine& engine, Stream&) {
      uint64_t failures = 0, choices = 0;
      if (engine.ReadHpzChecks(&failures, &choices)) ++running;
    });
  });
  EXPECT_EQ(running.load(), 0);
}

}  // namespace
}  // namespace zpp::engine
