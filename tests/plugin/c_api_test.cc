#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/run_command.h"
#include "zpp/zpp.h"

namespace {

TEST(CApiTest, VersionMatchesHeader) {
  int version = 0;
  ASSERT_EQ(zppGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, ZPP_VERSION_CODE);
  EXPECT_EQ(version, 100);  // 0.1.0
}

TEST(CApiTest, NullArgumentsAreInvalid) {
  EXPECT_EQ(zppGetVersion(nullptr), ncclInvalidArgument);
  EXPECT_EQ(zppGetStats(nullptr), ncclInvalidArgument);
  EXPECT_EQ(zppGetStepEpoch(nullptr), ncclInvalidArgument);
  EXPECT_EQ(zppGetPassThroughReasonName(zppReasonSmall, nullptr), ncclInvalidArgument);
}

TEST(CApiTest, StepEpochAdvancesAndShowsInStats) {
  uint64_t before = 0;
  ASSERT_EQ(zppGetStepEpoch(&before), ncclSuccess);
  uint64_t advanced = 0;
  ASSERT_EQ(zppStepEpochAdvance(&advanced), ncclSuccess);
  EXPECT_EQ(advanced, before + 1);
  ASSERT_EQ(zppStepEpochAdvance(nullptr), ncclSuccess);  // the result is optional
  uint64_t now = 0;
  ASSERT_EQ(zppGetStepEpoch(&now), ncclSuccess);
  EXPECT_EQ(now, before + 2);
  zppStats_t stats;
  std::memset(&stats, 0xff, sizeof(stats));
  ASSERT_EQ(zppGetStats(&stats), ncclSuccess);
  EXPECT_EQ(stats.step_epoch, now);
  EXPECT_EQ(stats.calls[zppPathQwz], 0u);  // nothing intercepted in this process
  EXPECT_EQ(stats.hpz_verify_failures, 0u);
}

TEST(CApiTest, StepEpochAdvanceIsThreadSafe) {
  uint64_t before = 0;
  ASSERT_EQ(zppGetStepEpoch(&before), ncclSuccess);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 500; ++i) zppStepEpochAdvance(nullptr);
    });
  }
  for (auto& thread : threads) thread.join();
  uint64_t after = 0;
  ASSERT_EQ(zppGetStepEpoch(&after), ncclSuccess);
  EXPECT_EQ(after, before + 2000);
}

TEST(CApiTest, TrainingPassHintsAreCheckedAndPerThread) {
  EXPECT_EQ(zppSetTrainingPass(7), ncclInvalidArgument);
  EXPECT_EQ(zppGetTrainingPass(nullptr), ncclInvalidArgument);
  ASSERT_EQ(zppSetTrainingPass(zppPassBackward), ncclSuccess);
  int pass = -1;
  std::thread([&] { zppGetTrainingPass(&pass); }).join();
  EXPECT_EQ(pass, zppPassForward) << "another thread's hint leaked";
  ASSERT_EQ(zppGetTrainingPass(&pass), ncclSuccess);
  EXPECT_EQ(pass, zppPassBackward);
  ASSERT_EQ(zppSetTrainingPass(zppPassUnknown), ncclSuccess);
  ASSERT_EQ(zppGetTrainingPass(&pass), ncclSuccess);
  EXPECT_EQ(pass, zppPassForward);
}

TEST(CApiTest, SkippedStepsAreCountedInTheStats) {
  zppStats_t before{}, after{};
  ASSERT_EQ(zppGetStats(&before), ncclSuccess);
  ASSERT_EQ(zppHpzStepSkipped(12, 3), ncclSuccess);
  ASSERT_EQ(zppGetStats(&after), ncclSuccess);
  EXPECT_EQ(after.hpz_skipped_steps, before.hpz_skipped_steps + 1);
  EXPECT_EQ(zppHpzChecks(nullptr, nullptr, nullptr), ncclInvalidArgument);
}

TEST(CApiTest, ReasonNames) {
  const char* name = nullptr;
  ASSERT_EQ(zppGetPassThroughReasonName(zppReasonSmall, &name), ncclSuccess);
  EXPECT_STREQ(name, "small");
  ASSERT_EQ(zppGetPassThroughReasonName(zppReasonTopology, &name), ncclSuccess);
  EXPECT_STREQ(name, "topology");
  EXPECT_EQ(zppGetPassThroughReasonName(zppNumReasons, &name), ncclInvalidArgument);
  EXPECT_EQ(zppGetPassThroughReasonName(-1, &name), ncclInvalidArgument);
}

}  // namespace

// zpp_torch reads zppStats_t through ctypes: its mirror must be exactly as large, or the C side
// writes past the end of the Python buffer whenever the struct grows.
TEST(CApiTest, TheTorchPackagesStatsMirrorHasTheStructsSize) {
  const std::string command = std::string("cd ") + ZPP_SOURCE_DIR +
                              "/plugin/torch/zpp_torch && python3 -c 'import ctypes, _stats; "
                              "print(ctypes.sizeof(_stats.Stats))'";
  const auto run = zpp::test::RunCommand(command);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(std::stoul(run.output), sizeof(zppStats_t));
}
