// The hooks' decisions on a communicator zpp did set up (a recording double stands in for the
// cuda_nccl one, on a 2-node x 2-rank shape; ZPP_QWZ=1 ZPP_QGZ=1): which calls reach zpp and
// with which arguments, and which go to NCCL under which reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "fake_nccl_calls.h"
#include "kernels/float_convert.h"
#include "recording_communicator.h"
#include "zpp/zpp.h"

namespace {

using zpp::plan::Reduction;
using zpp::test::Recording;

constexpr size_t kLarge = 1 << 20;  // 4 MiB of fp32 per rank: over ZPP_MIN_BYTES

// The configuration these tests run under, set before zpp reads its environment (on first use).
const bool kEnvironment = [] {
  setenv("ZPP_NCCL_LIBRARY", ZPP_FAKE_NCCL, 1);
  setenv("ZPP_QWZ", "1", 1);
  setenv("ZPP_QGZ", "1", 1);
  return true;
}();

using zpp::test::FakeCalls;

class DecisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Recording() = {};
    ncclUniqueId id{};
    ASSERT_EQ(ncclCommInitRank(&comm_, 4, id, 1), ncclSuccess);
    ASSERT_EQ(Recording().live, 1);
    send_.resize(kLarge * 4);
    recv_.resize(kLarge * 4);
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
    }
    EXPECT_EQ(Recording().live, 0);
  }
  uint64_t Reason(zppPassThroughReason_t reason) const {
    zppStats_t stats{};
    EXPECT_EQ(zppGetCommStats(comm_, &stats), ncclSuccess);
    return stats.passthrough[reason];
  }

  ncclComm_t comm_ = nullptr;
  std::vector<float> send_, recv_;
};

TEST_F(DecisionTest, EligibleAllGatherRunsOnZppNotOnNccl) {
  const int before = FakeCalls("ncclAllGather");
  ASSERT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  ASSERT_EQ(Recording().all_gathers.size(), 1u);
  const auto& args = Recording().all_gathers[0];
  EXPECT_EQ(args.send, send_.data());
  EXPECT_EQ(args.recv, recv_.data());
  EXPECT_EQ(args.count, kLarge);
  EXPECT_EQ(args.dtype, ncclFloat32);
  EXPECT_EQ(FakeCalls("ncclAllGather"), before);
}

TEST_F(DecisionTest, SmallAndIntegerCallsGoToNcclWithTheirReasons) {
  const int before = FakeCalls("ncclAllGather");
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), 1000, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclInt32, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclAllGather"), before + 2);
  EXPECT_TRUE(Recording().all_gathers.empty());
  EXPECT_EQ(Reason(zppReasonSmall), 1u);
  EXPECT_EQ(Reason(zppReasonDtype), 1u);
}

TEST_F(DecisionTest, ReductionsReachZppWithTheirScale) {
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
      ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclAvg, comm_, nullptr),
      ncclSuccess);
  float host_scale = 0.25f;
  ncclRedOp_t host_op{};
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&host_op, &host_scale, ncclFloat32, ncclScalarHostImmediate, comm_),
      ncclSuccess);
  host_scale = 8.0f;  // read at creation, as NCCL does
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, host_op, comm_, nullptr),
      ncclSuccess);
  float device_scale = 0.5f;  // stands for device memory
  ncclRedOp_t device_op{};
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&device_op, &device_scale, ncclFloat32, ncclScalarDevice, comm_),
      ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, device_op, comm_, nullptr),
      ncclSuccess);
  uint16_t bf16_scale = zpp::codec::FloatToBf16(0.125f);
  ncclRedOp_t bf16_op{};
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&bf16_op, &bf16_scale, ncclBfloat16, ncclScalarHostImmediate, comm_),
      ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclBfloat16, bf16_op, comm_, nullptr),
      ncclSuccess);

  const auto& calls = Recording().reduce_scatters;
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0].reduction, Reduction::kSum);
  EXPECT_EQ(calls[1].reduction, Reduction::kAvg);
  EXPECT_EQ(calls[2].reduction, Reduction::kPreMulSum);
  EXPECT_EQ(calls[2].premul, 0.25f);
  EXPECT_EQ(calls[2].premul_device, nullptr);
  EXPECT_EQ(calls[3].reduction, Reduction::kPreMulSum);
  EXPECT_EQ(calls[3].premul_device, &device_scale);
  EXPECT_EQ(calls[4].reduction, Reduction::kPreMulSum);
  EXPECT_EQ(calls[4].premul, 0.125f);
  EXPECT_EQ(calls[4].dtype, ncclBfloat16);
  for (const auto& call : calls) EXPECT_EQ(call.count, kLarge);
  EXPECT_EQ(ncclRedOpDestroy(host_op, comm_), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(device_op, comm_), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(bf16_op, comm_), ncclSuccess);
}

TEST_F(DecisionTest, OpsZppDoesNotTakeGoToNccl) {
  const int before = FakeCalls("ncclReduceScatter");
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclMax, comm_, nullptr),
      ncclSuccess);
  // A pre-multiplied sum made for another dtype than the call's.
  uint16_t half_scale = zpp::codec::FloatToHalf(0.5f);
  ncclRedOp_t half_op{};
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&half_op, &half_scale, ncclFloat16, ncclScalarHostImmediate, comm_),
      ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, half_op, comm_, nullptr),
      ncclSuccess);
  // A destroyed op is no longer zpp's to apply.
  EXPECT_EQ(ncclRedOpDestroy(half_op, comm_), ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat16, half_op, comm_, nullptr),
      ncclSuccess);
  EXPECT_TRUE(Recording().reduce_scatters.empty());
  EXPECT_EQ(FakeCalls("ncclReduceScatter"), before + 3);
  EXPECT_EQ(Reason(zppReasonRedOp), 3u);
}

TEST_F(DecisionTest, GroupedCallsRunAtTheOutermostGroupEndInCallOrder) {
  std::vector<float> other(kLarge * 4);
  const int ends = FakeCalls("ncclGroupEnd");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(other.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  // A call zpp does not take goes into NCCL's group as usual.
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), 10, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_TRUE(Recording().all_gathers.empty()) << "ran before the outermost group end";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclGroupEnd"), ends + 2);
  ASSERT_EQ(Recording().all_gathers.size(), 2u);
  EXPECT_EQ(Recording().all_gathers[0].send, send_.data());
  EXPECT_EQ(Recording().all_gathers[1].send, other.data());
  EXPECT_EQ(Reason(zppReasonSmall), 1u);
  // The next group starts empty.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(Recording().all_gathers.size(), 2u);
}

TEST_F(DecisionTest, CapturedCallsGoToNccl) {
  Recording().capturing = true;
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
      ncclSuccess);
  Recording().capturing = false;
  EXPECT_TRUE(Recording().reduce_scatters.empty());
  EXPECT_EQ(Reason(zppReasonCapture), 1u);
  // And the next call runs on zpp again.
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(Recording().all_gathers.size(), 1u);
}

TEST_F(DecisionTest, AbortReachesZppBeforeNccl) {
  EXPECT_EQ(ncclCommAbort(comm_), ncclSuccess);
  EXPECT_EQ(Recording().aborts, 1);
  comm_ = nullptr;
}

TEST_F(DecisionTest, SplitChildrenGetTheirOwnZpp) {
  ncclComm_t child = nullptr;
  ASSERT_EQ(ncclCommSplit(comm_, 0, 1, &child, nullptr), ncclSuccess);
  EXPECT_EQ(Recording().live, 2);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, child, nullptr),
            ncclSuccess);
  EXPECT_EQ(Recording().all_gathers.size(), 1u);
  EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
  EXPECT_EQ(Recording().live, 1);
}

TEST(DecisionSetUpTest, AFailedSetUpPassesEverythingThrough) {
  Recording() = {};
  Recording().fail_setup = true;
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(ncclCommInitRank(&comm, 4, id, 0), ncclSuccess);  // never fails the creation
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("set-up failed on purpose; its calls pass through"), std::string::npos);
  std::vector<float> data(kLarge * 4);
  EXPECT_EQ(ncclAllGather(data.data(), data.data(), kLarge, ncclFloat32, comm, nullptr),
            ncclSuccess);
  zppStats_t stats{};
  ASSERT_EQ(zppGetCommStats(comm, &stats), ncclSuccess);
  EXPECT_EQ(stats.passthrough[zppReasonUnavailable], 1u);
  EXPECT_TRUE(Recording().all_gathers.empty());
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  Recording().fail_setup = false;
}

}  // namespace
