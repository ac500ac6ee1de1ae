// The exported nccl* hooks over a stand-in NCCL (fake_nccl.cc, named by ZPP_NCCL_LIBRARY): what
// is forwarded unchanged, what zpp answers itself, and the reason each pass-through is counted
// under. No GPU here, so no communicator gets zpp set up: two-rank ones say "unavailable".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "fake_nccl_calls.h"
#include "zpp/zpp.h"

namespace {

using ::testing::HasSubstr;

using zpp::test::FakeCalls;

ncclComm_t NewComm(int nranks, int rank = 0) {
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  EXPECT_EQ(ncclCommInitRank(&comm, nranks, id, rank), ncclSuccess);
  return comm;
}

zppStats_t CommStats(ncclComm_t comm) {
  zppStats_t stats{};
  EXPECT_EQ(zppGetCommStats(comm, &stats), ncclSuccess);
  return stats;
}

TEST(HooksTest, ForwardsCreationGroupsAndCollectivesToTheRealNccl) {
  ncclComm_t comm = NewComm(1);
  ASSERT_NE(comm, nullptr);
  const int before = FakeCalls("ncclAllGather");
  ASSERT_GE(before, 0) << "the fake NCCL was not loaded through ZPP_NCCL_LIBRARY";
  const int group_ends = FakeCalls("ncclGroupEnd");
  const int destroys = FakeCalls("ncclCommDestroy");
  float data[4] = {1, 2, 3, 4};
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(data, data, 4, ncclFloat32, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclReduceScatter(data, data, 4, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclAllGather"), before + 1);
  EXPECT_EQ(FakeCalls("ncclGroupEnd"), group_ends + 1);

  float scale = 0.5f;
  ncclRedOp_t premul{};
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&premul, &scale, ncclFloat32, ncclScalarHostImmediate, comm),
            ncclSuccess);
  EXPECT_EQ(ncclReduceScatter(data, data, 4, ncclFloat32, premul, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(premul, comm), ncclSuccess);

  ncclComm_t child = nullptr;
  EXPECT_EQ(ncclCommSplit(comm, 0, 0, &child, nullptr), ncclSuccess);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(zppGetCommStats(child, nullptr), ncclInvalidArgument);
  zppStats_t child_stats{};
  EXPECT_EQ(zppGetCommStats(child, &child_stats), ncclSuccess);  // tracked from its creation
  EXPECT_EQ(ncclCommFinalize(child), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);

  const zppStats_t stats = CommStats(comm);
  EXPECT_EQ(stats.calls[zppPathPassThrough], 3u);
  EXPECT_EQ(stats.passthrough[zppReasonOneRank], 3u);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclCommDestroy"), destroys + 2);
}

TEST(HooksTest, AFunctionTheLoadedNcclLacksIsInvalidUsageWithAWarning) {
  ncclComm_t comm = NewComm(1);
  ncclComm_t shrunk = nullptr;
  ::testing::internal::CaptureStderr();
  ncclUniqueId id{};
  const ncclResult_t result = ncclCommInitRankScalable(&shrunk, 1, 0, 1, &id, nullptr);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(result, ncclInvalidUsage);
  EXPECT_THAT(log, HasSubstr("has no ncclCommInitRankScalable"));
  EXPECT_EQ(shrunk, nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(HooksTest, NullCommIsNcclsInvalidArgument) {
  float data[2] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // loads the real (fake) NCCL
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  const int before = FakeCalls("ncclAllGather");
  EXPECT_EQ(ncclAllGather(data, data, 2, ncclFloat32, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclReduceScatter(data, data, 1, ncclFloat32, ncclSum, nullptr, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(FakeCalls("ncclAllGather"), before + 1);  // NCCL's answer, forwarded
}

TEST(HooksTest, BadArgumentsPassThroughAndNcclReportsThem) {
  ncclComm_t comm = NewComm(2);
  float data[8] = {};
  // NULL buffers with a count: NCCL's ncclInvalidArgument, counted as invalid-args.
  EXPECT_EQ(ncclAllGather(nullptr, data, 4, ncclFloat32, comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclReduceScatter(data, nullptr, 4, ncclFloat32, ncclSum, comm, nullptr),
            ncclInvalidArgument);
  // An unknown dtype (the first value past NCCL's: still inside the enum's range, so no UB in
  // C++), an unknown op.
  EXPECT_EQ(ncclAllGather(data, data, 4, static_cast<ncclDataType_t>(ncclNumTypes), comm, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(
      ncclReduceScatter(data, data, 4, ncclFloat32, static_cast<ncclRedOp_t>(1000), comm, nullptr),
      ncclInvalidArgument);
  // Count 0 is valid and does nothing, as in NCCL.
  EXPECT_EQ(ncclAllGather(nullptr, nullptr, 0, ncclFloat32, comm, nullptr), ncclSuccess);
  const zppStats_t stats = CommStats(comm);
  EXPECT_EQ(stats.passthrough[zppReasonInvalidArgs], 3u);
  EXPECT_EQ(stats.calls[zppPathPassThrough], 5u);
  EXPECT_EQ(stats.calls[zppPathQwz] + stats.calls[zppPathHpz] + stats.calls[zppPathQgz], 0u);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(HooksTest, GroupsAreForwardedLevelByLevel) {
  ncclComm_t comm = NewComm(2);
  float data[8] = {};
  const int ends = FakeCalls("ncclGroupEnd");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // nested: only the outermost end launches
  EXPECT_EQ(ncclAllGather(data, data, 4, ncclFloat32, comm, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclReduceScatter(data, data, 2, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclGroupEnd"), ends + 2);
  // No GPU here, so zpp is not set up on the communicator: its calls go to NCCL, grouped or not.
  EXPECT_EQ(CommStats(comm).passthrough[zppReasonUnavailable], 2u);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Without a GPU zpp cannot set up on a non-blocking communicator either (here it does not even
// try: with no driver, the capture query fails, which zpp takes as capturing), and every call
// passes through with NCCL's ncclInProgress answers handed back unchanged. The set-up itself is
// in decision_test.cc.
TEST(HooksTest, NonblockingCommunicatorsWithoutAGpuPassThrough) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclInProgress);
  ASSERT_NE(comm, nullptr);
  float data[8] = {};
  EXPECT_EQ(ncclAllGather(data, data, 4, ncclFloat32, comm, nullptr), ncclInProgress);
  ncclComm_t child = nullptr;  // a split of a nonblocking communicator inherits it
  EXPECT_EQ(ncclCommSplit(comm, 1, 0, &child, nullptr), ncclInProgress);
  EXPECT_EQ(ncclAllGather(data, data, 4, ncclFloat32, child, nullptr), ncclInProgress);
  EXPECT_EQ(CommStats(comm).passthrough[zppReasonNonblocking], 1u);
  EXPECT_EQ(CommStats(child).passthrough[zppReasonNonblocking], 1u);
  EXPECT_EQ(ncclCommAbort(child), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

TEST(HooksTest, SplitWithNoColorGivesNoCommunicator) {
  ncclComm_t comm = NewComm(1);
  ncclComm_t child = reinterpret_cast<ncclComm_t>(0x1);
  EXPECT_EQ(ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, 0, &child, nullptr), ncclSuccess);
  EXPECT_EQ(child, nullptr);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// Run by StatsExitTest with ZPP_PROGRESS=2: the line at the second epoch, from rank 0 of the
// largest communicator (4 ranks), not from the rank 1 of a pair beside it.
TEST(HooksTest, ProgressAtEpochAdvance) {
  ncclComm_t world = NewComm(4, 0);
  ncclComm_t pair = NewComm(2, 1);
  float data[16] = {};
  EXPECT_EQ(ncclAllGather(data, data, 4, ncclFloat32, world, nullptr), ncclSuccess);
  for (int step = 0; step < 3; ++step) EXPECT_EQ(zppStepEpochAdvance(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(world), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(pair), ncclSuccess);
}

TEST(HooksTest, ProcessStatsAddUpTheCommunicators) {
  zppStats_t before{};
  ASSERT_EQ(zppGetStats(&before), ncclSuccess);
  ncclComm_t a = NewComm(1);
  ncclComm_t b = NewComm(2);
  float data[8] = {};
  EXPECT_EQ(ncclAllGather(data, data, 4, ncclFloat32, a, nullptr), ncclSuccess);
  EXPECT_EQ(ncclAllGather(data, data, 4, ncclFloat32, b, nullptr), ncclSuccess);
  zppStats_t after{};
  ASSERT_EQ(zppGetStats(&after), ncclSuccess);
  EXPECT_EQ(after.calls[zppPathPassThrough] - before.calls[zppPathPassThrough], 2u);
  EXPECT_EQ(after.input_bytes[zppPathPassThrough] - before.input_bytes[zppPathPassThrough], 32u);
  EXPECT_EQ(ncclCommDestroy(a), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(b), ncclSuccess);
}

}  // namespace
