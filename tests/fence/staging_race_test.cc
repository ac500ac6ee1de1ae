// The fence on staging buffers, through the configuration users set. Two qwZ all-gathers on two
// streams of one communicator, back to back, share the pool's staging buffers: the second may
// reuse the piece buffer the first has quantized into but not yet sent. Here the first call's
// all-gather is held (rank 0's stream waits at a gate), so that on every other rank the piece
// sits in its staging buffer while the second call runs on a fast stream. With ZPP_FENCE=0 the
// second call overwrites it and the first call's outputs carry the second call's values; with
// the fence the second stream waits on the device for the first and both outputs are exact.
// (hpZ's race test cannot show this: its secondary partition has a fence of its own.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/engine.h"
#include "sim/sim_backend.h"

namespace zpp {
namespace {

constexpr size_t kCount = 512;  // two blocks of 256
constexpr int kRanks = 4;

// Integers in [-127, 127] with 127 in every block: the int8 scale is exactly 1, so the codec
// is exact and any wrong output is a wrong buffer, not rounding.
float Value(int rank, int call, size_t i) {
  if (i % 256 == 0) return 127.0f;
  return static_cast<float>(static_cast<int>((rank * 37 + i * 5 + call * 101) % 254) - 126);
}

// The configuration a user's environment gives: qwZ on every call, and ZPP_FENCE as given.
Config ConfigWith(std::optional<std::string> fence) {
  std::map<std::string, std::string> env = {{"ZPP_QWZ", "1"}, {"ZPP_MIN_BYTES", "0"}};
  if (fence) env["ZPP_FENCE"] = *fence;
  const config::ParseResult parsed =
      config::ParseEnvironment([&](std::string_view name) -> std::optional<std::string> {
        auto it = env.find(std::string(name));
        if (it == env.end()) return std::nullopt;
        return it->second;
      });
  EXPECT_TRUE(parsed.warnings.empty());
  return parsed.config;
}

struct RaceResult {
  int wrong_outputs = 0;     // output elements off their exact value, both calls, all ranks
  int second_ran_first = 0;  // ranks whose second call finished while the first was held
  int plans_not_qwz = 0;
};

RaceResult RunTwoStreamQwz(const Config& config) {
  const sim::ClusterLayout layout = sim::ClusterLayout::Uniform(2, 2);
  const plan::Shape shape = sim::ShapeOf(layout);
  const engine::EngineOptions options = engine::OptionsFrom(config);
  std::promise<void> gate;
  std::shared_future<void> gate_open = gate.get_future().share();
  std::latch looked(kRanks);
  std::atomic<int> wrong{0}, early{0}, not_qwz{0};
  sim::SimWorld world(layout);
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    StatsCounters stats;
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> held, fast;
    ASSERT_EQ(backend.CreateStream(&held), ncclSuccess);
    ASSERT_EQ(backend.CreateStream(&fast), ncclSuccess);
    std::vector<float> first(kCount), second(kCount);
    for (size_t i = 0; i < kCount; ++i) {
      first[i] = Value(rank, 0, i);
      second[i] = Value(rank, 1, i);
    }
    std::vector<float> first_out(kCount * kRanks, 0), second_out(kCount * kRanks, 0);
    // Rank 0's first call starts only when the gate opens: every rank's first all-gather waits
    // for it, with its piece already quantized into a staging buffer.
    if (rank == 0) backend.Launch(*held, [gate_open] { gate_open.wait(); });
    plan::Plan chosen;
    ASSERT_EQ(
        engine.AllGather({first.data(), first_out.data(), kCount, ncclFloat32}, *held, &chosen),
        ncclSuccess);
    if (chosen.kind != plan::PlanKind::kQwzFlatAllGather) ++not_qwz;
    ASSERT_EQ(engine.AllGather({second.data(), second_out.data(), kCount, ncclFloat32}, *fast),
              ncclSuccess);
    std::promise<void> second_done;
    backend.Launch(*fast, [&second_done] { second_done.set_value(); });
    // Without the fence the second call completes at once (2 s: room for a loaded machine or a
    // sanitizer); with it, it waits for the first, held until every rank has looked.
    if (second_done.get_future().wait_for(std::chrono::seconds(2)) == std::future_status::ready) {
      ++early;
    }
    looked.count_down();
    if (rank == 0) {
      looked.wait();
      gate.set_value();
    }
    backend.Synchronize(*held);
    backend.Synchronize(*fast);
    EXPECT_EQ(backend.AsyncError(), ncclSuccess);
    for (int r = 0; r < kRanks; ++r) {
      for (size_t i = 0; i < kCount; ++i) {
        if (first_out[r * kCount + i] != Value(r, 0, i)) ++wrong;
        if (second_out[r * kCount + i] != Value(r, 1, i)) ++wrong;
      }
    }
  });
  return {wrong.load(), early.load(), not_qwz.load()};
}

TEST(StagingRaceTest, WithZppFenceOffTheSecondCallOverwritesTheFirstCallsPiece) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the unfenced run is a real data race, which TSan reports; under TSan only "
                  "the fenced run is checked";
#endif
  const RaceResult result = RunTwoStreamQwz(ConfigWith("0"));
  EXPECT_EQ(result.plans_not_qwz, 0);
  EXPECT_EQ(result.second_ran_first, kRanks) << "ZPP_FENCE=0 did not turn the fence off";
  // Every rank's first output holds ranks 1..3's second pieces (rank 0 quantized after).
  EXPECT_GT(result.wrong_outputs, 0) << "the race never showed without the fence";
}

TEST(StagingRaceTest, WithTheFenceByDefaultBothOutputsAreExact) {
  const RaceResult result = RunTwoStreamQwz(ConfigWith(std::nullopt));
  EXPECT_EQ(result.plans_not_qwz, 0);
  EXPECT_EQ(result.second_ran_first, 0) << "the second stream did not wait for the first";
  EXPECT_EQ(result.wrong_outputs, 0);
}

TEST(StagingRaceTest, ZppFenceOneIsTheDefault) {
  const RaceResult result = RunTwoStreamQwz(ConfigWith("1"));
  EXPECT_EQ(result.second_ran_first, 0);
  EXPECT_EQ(result.wrong_outputs, 0);
}

}  // namespace
}  // namespace zpp
