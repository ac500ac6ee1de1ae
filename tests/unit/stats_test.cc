#include "stats/stats.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "epoch/step_epoch.h"

namespace zpp {
namespace {

TEST(StatsTest, SnapshotReflectsCounters) {
  StatsCounters stats;
  stats.AddCall(zppPathQwz, 1000);
  stats.AddPassThrough(zppReasonSmall, 10);
  stats.AddPassThrough(zppReasonDtype, 20);
  stats.AddSent(zppLinkInterNode, 512);
  stats.AddHpzHit();
  stats.AddHpzMiss();
  stats.AddHpzMiss();
  stats.AddHpzVerifyFailures(1);
  zppStats_t s{};
  stats.Snapshot(&s);
  EXPECT_EQ(s.calls[zppPathQwz], 1u);
  EXPECT_EQ(s.input_bytes[zppPathQwz], 1000u);
  EXPECT_EQ(s.calls[zppPathPassThrough], 2u);
  EXPECT_EQ(s.input_bytes[zppPathPassThrough], 30u);
  EXPECT_EQ(s.passthrough[zppReasonSmall], 1u);
  EXPECT_EQ(s.passthrough[zppReasonDtype], 1u);
  EXPECT_EQ(s.sent_bytes[zppLinkInterNode], 512u);
  EXPECT_EQ(s.sent_bytes[zppLinkIntraNode], 0u);
  EXPECT_EQ(s.hpz_hits, 1u);
  EXPECT_EQ(s.hpz_misses, 2u);
  EXPECT_EQ(s.hpz_verify_failures, 1u);
}

TEST(StatsTest, KeptBytesIsThePeakAndTheParentSeesIt) {
  StatsCounters process;
  StatsCounters comm(&process);
  comm.NoteHpzKeptBytes(300);
  comm.NoteHpzKeptBytes(700);
  comm.NoteHpzKeptBytes(200);  // partitions dropped: the peak stays
  zppStats_t s{};
  comm.Snapshot(&s);
  EXPECT_EQ(s.hpz_kept_bytes_peak, 700u);
  process.Snapshot(&s);
  EXPECT_EQ(s.hpz_kept_bytes_peak, 700u);
}

TEST(StatsTest, HostWaitsCountAndTheParentSeesThem) {
  StatsCounters process;
  StatsCounters comm(&process);
  comm.AddHostWait();
  comm.AddHostWait();
  zppStats_t s{};
  comm.Snapshot(&s);
  EXPECT_EQ(s.host_waits, 2u);
  process.Snapshot(&s);
  EXPECT_EQ(s.host_waits, 2u);
}

TEST(StatsTest, ConcurrentAddsAreAllCounted) {
  StatsCounters stats;
  constexpr int kThreads = 4;
  constexpr int kAdds = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) {
        stats.AddCall(zppPathQgz, 3);
        stats.AddSent(zppLinkInterRack, 1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  zppStats_t s{};
  stats.Snapshot(&s);
  EXPECT_EQ(s.calls[zppPathQgz], uint64_t{kThreads * kAdds});
  EXPECT_EQ(s.input_bytes[zppPathQgz], uint64_t{3 * kThreads * kAdds});
  EXPECT_EQ(s.sent_bytes[zppLinkInterRack], uint64_t{kThreads * kAdds});
}

TEST(StatsTest, EveryReasonHasAName) {
  for (int r = 0; r < zppNumReasons; ++r) {
    EXPECT_NE(PassThroughReasonName(r), nullptr) << r;
  }
  EXPECT_EQ(PassThroughReasonName(zppNumReasons), nullptr);
}

TEST(StepEpochTest, AdvancesOncePerCallAcrossThreads) {
  StepEpoch epoch;
  EXPECT_EQ(epoch.Current(), 0u);
  EXPECT_EQ(epoch.Advance(), 1u);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) epoch.Advance();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(epoch.Current(), 4001u);
}

}  // namespace
}  // namespace zpp
