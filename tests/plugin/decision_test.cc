// The hooks' decisions on a communicator zpp did set up (a recording double stands in for the
// cuda_nccl one, on a 2-node x 2-rank shape; ZPP_QWZ=1 ZPP_QGZ=1 ZPP_QAR=1): which calls reach zpp
// and with which arguments, and which go to NCCL under which reason.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "epoch/training_pass.h"
#include "fake_nccl_calls.h"
#include "kernels/math/float_convert.h"
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
  setenv("ZPP_QAR", "1", 1);
  return true;
}();

using zpp::test::FakeCalls;

// A non-blocking communicator as PyTorch makes one: its creation answers ncclInProgress.
ncclComm_t NonblockingComm() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 4, id, 1, &config), ncclInProgress);
  return comm;
}

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

// hpZ pairs a backward gather with its step's forward fill (docs/architecture.md, "hpZ's
// pairing"): the hook hands zpp the pass of the calling thread. PyTorch runs a CUDA backward on
// threads named pt_autograd_<device>; any other thread is forward; a hint overrides both.
zpp::TrainingPass PassOfAGatherFrom(const std::function<void()>& prepare, void* send, void* recv,
                                    ncclComm_t comm) {
  zpp::TrainingPass seen = zpp::TrainingPass::kUnknown;
  std::thread caller([&] {
    prepare();
    const size_t before = Recording().all_gathers.size();
    EXPECT_EQ(ncclAllGather(send, recv, kLarge, ncclFloat32, comm, nullptr), ncclSuccess);
    if (Recording().all_gathers.size() == before + 1) seen = Recording().all_gathers.back().pass;
  });
  caller.join();
  return seen;
}

TEST_F(DecisionTest, AllGathersCarryTheirCallersTrainingPass) {
  void* send = send_.data();
  void* recv = recv_.data();
  const auto named = [](const char* name) {
    return [name] { pthread_setname_np(pthread_self(), name); };
  };
  EXPECT_EQ(PassOfAGatherFrom([] {}, send, recv, comm_), zpp::TrainingPass::kForward);
  EXPECT_EQ(PassOfAGatherFrom(named("pt_autograd_0"), send, recv, comm_),
            zpp::TrainingPass::kBackward);
  EXPECT_EQ(PassOfAGatherFrom(named("pt_autograd_3"), send, recv, comm_),
            zpp::TrainingPass::kBackward);
  EXPECT_EQ(PassOfAGatherFrom(named("pt_main_thread"), send, recv, comm_),
            zpp::TrainingPass::kForward);
  // A hint wins over the thread's name, and zppPassUnknown clears it.
  EXPECT_EQ(PassOfAGatherFrom([] { zppSetTrainingPass(zppPassBackward); }, send, recv, comm_),
            zpp::TrainingPass::kBackward);
  EXPECT_EQ(PassOfAGatherFrom(
                [&] {
                  named("pt_autograd_0")();
                  zppSetTrainingPass(zppPassForward);
                },
                send, recv, comm_),
            zpp::TrainingPass::kForward);
  EXPECT_EQ(PassOfAGatherFrom(
                [] {
                  zppSetTrainingPass(zppPassBackward);
                  zppSetTrainingPass(zppPassUnknown);
                },
                send, recv, comm_),
            zpp::TrainingPass::kForward);
}

// A grouped call runs at the group end with the pass of the thread that issued it.
TEST_F(DecisionTest, GroupedAllGathersKeepTheirIssuersPass) {
  std::thread caller([&] {
    pthread_setname_np(pthread_self(), "pt_autograd_0");
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
              ncclSuccess);
    zppSetTrainingPass(zppPassForward);  // changed before the group ends
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  });
  caller.join();
  ASSERT_EQ(Recording().all_gathers.size(), 1u);
  EXPECT_EQ(Recording().all_gathers[0].pass, zpp::TrainingPass::kBackward);
}

// The step guard reads every live communicator's hpZ counters through zppHpzChecks.
TEST_F(DecisionTest, HpzChecksSumTheCommunicatorsCounters) {
  Recording().hpz_failures = 2;
  Recording().hpz_choices = 0x12345;
  ncclComm_t second = nullptr;
  ncclUniqueId id{};
  ASSERT_EQ(ncclCommInitRank(&second, 4, id, 1), ncclSuccess);
  int enabled = -1;
  uint64_t failures = 0, choices = 0;
  ASSERT_EQ(zppHpzChecks(&enabled, &failures, &choices), ncclSuccess);
  EXPECT_EQ(enabled, 1);  // the recording communicators say they run hpZ
  EXPECT_EQ(failures, 4u);
  EXPECT_EQ(choices, 2u * 0x12345u);
  EXPECT_EQ(ncclCommDestroy(second), ncclSuccess);
  ASSERT_EQ(zppHpzChecks(&enabled, &failures, &choices), ncclSuccess);
  EXPECT_EQ(failures, 2u);  // live communicators only
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

// What NCCL sends for a call zpp planned and passed through counts as NCCL's ring sends it, both
// as sent and as plain's (zppStats_t), as the engine counts the pass-throughs it runs itself: a
// GPU job's bytes then compare with plain's, pass-throughs included.
TEST_F(DecisionTest, PassThroughsCountWhatNcclsRingSends) {
  zppStats_t before{}, after{};
  ASSERT_EQ(zppGetCommStats(comm_, &before), ncclSuccess);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), 1000, ncclFloat32, comm_, nullptr),
            ncclSuccess);  // small
  Recording().capturing = true;
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
      ncclSuccess);
  Recording().capturing = false;
  ASSERT_EQ(zppGetCommStats(comm_, &after), ncclSuccess);
  // Two nodes: each rank's shard enters the other node once.
  const uint64_t ring = 1000 * sizeof(float) + kLarge * sizeof(float);
  EXPECT_EQ(after.plain_off_node_bytes - before.plain_off_node_bytes, ring);
  EXPECT_EQ(after.sent_bytes[zppLinkInterNode] - before.sent_bytes[zppLinkInterNode], ring);
  EXPECT_EQ(after.sent_bytes[zppLinkIntraNode], before.sent_bytes[zppLinkIntraNode]);
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

// DDP's buckets are reduced in place, HSDP's out of place: both reach zpp, none NCCL.
TEST_F(DecisionTest, AllReduceReachesZppInAndOutOfPlace) {
  const int before = FakeCalls("ncclAllReduce");
  EXPECT_EQ(ncclAllReduce(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclAvg, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(
      ncclAllReduce(recv_.data(), recv_.data(), kLarge, ncclBfloat16, ncclSum, comm_, nullptr),
      ncclSuccess);
  float host_scale = 0.25f;
  ncclRedOp_t host_op{};
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&host_op, &host_scale, ncclFloat32, ncclScalarHostImmediate, comm_),
      ncclSuccess);
  EXPECT_EQ(ncclAllReduce(send_.data(), recv_.data(), kLarge, ncclFloat32, host_op, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(host_op, comm_), ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclAllReduce"), before);
  const auto& calls = Recording().all_reduces;
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].send, send_.data());
  EXPECT_EQ(calls[0].recv, recv_.data());
  EXPECT_EQ(calls[0].reduction, Reduction::kAvg);
  EXPECT_EQ(calls[1].send, calls[1].recv);
  EXPECT_EQ(calls[1].dtype, ncclBfloat16);
  EXPECT_EQ(calls[1].reduction, Reduction::kSum);
  EXPECT_EQ(calls[2].reduction, Reduction::kPreMulSum);
  EXPECT_EQ(calls[2].premul, 0.25f);
  for (const auto& call : calls) EXPECT_EQ(call.count, kLarge);
}

// Every all-reduce zpp does not compress goes to NCCL unchanged, its reason counted.
TEST_F(DecisionTest, AllReducesZppDoesNotTakeGoToNcclWithTheirReasons) {
  const int before = FakeCalls("ncclAllReduce");
  EXPECT_EQ(ncclAllReduce(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclMax, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(
      ncclAllReduce(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclProd, comm_, nullptr),
      ncclSuccess);
  EXPECT_EQ(ncclAllReduce(send_.data(), recv_.data(), kLarge, ncclInt32, ncclSum, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclAllReduce(send_.data(), recv_.data(), kLarge, ncclFloat64, ncclSum, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclAllReduce(send_.data(), recv_.data(), 1, ncclFloat32, ncclSum, comm_, nullptr),
            ncclSuccess);  // a loss or a grad norm
  // A pre-multiplied sum made for another dtype than the call's.
  uint16_t half_scale = zpp::codec::FloatToHalf(0.5f);
  ncclRedOp_t half_op{};
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&half_op, &half_scale, ncclFloat16, ncclScalarHostImmediate, comm_),
      ncclSuccess);
  EXPECT_EQ(ncclAllReduce(send_.data(), recv_.data(), kLarge, ncclFloat32, half_op, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(half_op, comm_), ncclSuccess);
  // NCCL's own answer to a bad call is NCCL's to give.
  EXPECT_EQ(ncclAllReduce(nullptr, recv_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
            ncclInvalidArgument);
  EXPECT_TRUE(Recording().all_reduces.empty());
  EXPECT_EQ(FakeCalls("ncclAllReduce"), before + 7);
  EXPECT_EQ(Reason(zppReasonRedOp), 3u);
  EXPECT_EQ(Reason(zppReasonDtype), 2u);
  EXPECT_EQ(Reason(zppReasonSmall), 1u);
  EXPECT_EQ(Reason(zppReasonInvalidArgs), 1u);
}

TEST_F(DecisionTest, GroupedAllReducesRunAtTheGroupEndInCallOrder) {
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(send_.data(), send_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
      ncclSuccess);
  EXPECT_EQ(ncclAllReduce(recv_.data(), recv_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
            ncclSuccess);
  EXPECT_TRUE(Recording().all_reduces.empty()) << "ran before the group end";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(Recording().all_reduces.size(), 2u);
  EXPECT_EQ(Recording().all_reduces[0].send, send_.data());
  EXPECT_EQ(Recording().all_reduces[1].send, recv_.data());
  EXPECT_EQ(Recording().reduce_scatters.size(), 1u);
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

// PyTorch's estimate path: a simulated group runs nothing of zpp's, hands its calls to NCCL's
// simulation unchanged, and leaves nothing behind for the next group.
TEST_F(DecisionTest, SimulatedGroupRunsNothingOfZppsAndLeavesTheGroupClean) {
  const int gathers = FakeCalls("ncclAllGather");
  const int scatters = FakeCalls("ncclReduceScatter");
  const int simulated = FakeCalls("ncclGroupSimulateEnd");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclSum, comm_, nullptr),
      ncclSuccess);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclGroupSimulateEnd"), simulated + 1);
  EXPECT_TRUE(Recording().all_gathers.empty()) << "a simulation ran zpp's plan";
  EXPECT_TRUE(Recording().reduce_scatters.empty()) << "a simulation ran zpp's plan";
  EXPECT_EQ(FakeCalls("ncclAllGather"), gathers + 1) << "NCCL's estimate misses the call";
  EXPECT_EQ(FakeCalls("ncclReduceScatter"), scatters + 1) << "NCCL's estimate misses the call";
  // The next real group runs its own call, and only it.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(Recording().all_gathers.size(), 1u);
  EXPECT_TRUE(Recording().reduce_scatters.empty());
}

// Revoke (torch's fault tolerance) ends zpp's work on the communicator as abort does, keeps its
// state, and sends later calls to NCCL; the destroy after it works.
TEST_F(DecisionTest, RevokeAbortsZppsSubCommunicatorsAndLaterCallsGoToNccl) {
  const int revokes = FakeCalls("ncclCommRevoke");
  const int gathers = FakeCalls("ncclAllGather");
  EXPECT_EQ(ncclCommRevoke(comm_, NCCL_REVOKE_DEFAULT), ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclCommRevoke"), revokes + 1);
  EXPECT_EQ(Recording().aborts, 1);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  EXPECT_TRUE(Recording().all_gathers.empty());
  EXPECT_EQ(FakeCalls("ncclAllGather"), gathers + 1);
  EXPECT_EQ(Recording().live, 1) << "revoke freed zpp's state";
  Recording().device_uses_ended = true;  // the destroy in TearDown then frees it
}

// NCCL_SHRINK_ABORT ends the parent's operations before the shrink: zpp's sub-communicators
// first; the shrunk communicator gets a zpp of its own.
TEST_F(DecisionTest, ShrinkWithAbortAbortsTheParentsZppFirst) {
  ncclComm_t shrunk = nullptr;
  int excluded[] = {3};
  ASSERT_EQ(ncclCommShrink(comm_, excluded, 1, &shrunk, nullptr, NCCL_SHRINK_ABORT), ncclSuccess);
  EXPECT_EQ(Recording().aborts, 1);
  ASSERT_NE(shrunk, nullptr);
  EXPECT_EQ(Recording().live, 2) << "the parent's zpp kept, the child's made";
  EXPECT_EQ(ncclCommDestroy(shrunk), ncclSuccess);
  EXPECT_EQ(Recording().live, 1);
  Recording().device_uses_ended = true;  // the destroy in TearDown then frees the parent's
}

// A communicator created through an entry point zpp does not hook may sit at the address of one
// that was destroyed (allocators reuse addresses): zpp does not know it, and NCCL judges its calls.
TEST_F(DecisionTest, ACommunicatorAtADestroyedOnesAddressIsNcclsToJudge) {
  ASSERT_EQ(ncclCommDestroy(comm_), ncclSuccess);
  ncclComm_t grown = nullptr;
  ASSERT_EQ(zpp::test::FakeCommGrow(&grown, 4, 1), ncclSuccess);
  ASSERT_EQ(grown, comm_) << "the stand-in reuses the address";
  comm_ = nullptr;
  const int gathers = FakeCalls("ncclAllGather");
  const int scatters = FakeCalls("ncclReduceScatter");
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, grown, nullptr),
            ncclSuccess);
  EXPECT_EQ(
      ncclReduceScatter(send_.data(), recv_.data(), kLarge, ncclFloat32, ncclSum, grown, nullptr),
      ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclAllGather"), gathers + 1);
  EXPECT_EQ(FakeCalls("ncclReduceScatter"), scatters + 1);
  EXPECT_TRUE(Recording().all_gathers.empty());
  zppStats_t stats{};
  EXPECT_EQ(zppGetCommStats(grown, &stats), ncclInvalidArgument);  // not zpp's
  EXPECT_EQ(ncclCommDestroy(grown), ncclSuccess);
}

// A failed sub-communicator reaches the parent's ncclCommGetAsyncError (PyTorch's watchdog).
TEST_F(DecisionTest, SubCommunicatorErrorReachesTheParentsAsyncError) {
  ncclResult_t error = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comm_, &error), ncclSuccess);
  EXPECT_EQ(error, ncclSuccess);
  Recording().async_error = ncclRemoteError;
  ASSERT_EQ(ncclCommGetAsyncError(comm_, &error), ncclSuccess);
  EXPECT_EQ(error, ncclRemoteError);
  Recording().async_error = ncclSuccess;
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

// Abort aborts zpp's sub-communicators and frees nothing on the spot, since a free (cudaFree)
// would wait for the stuck kernel the abort is meant to end. Issue 25, item 3: the state (its
// device memory) is freed at a later creation or destroy once its device work has run, so that
// in-process restarts do not leak a reservation each.
TEST_F(DecisionTest, AbortFreesZppsStateOnceItsDeviceWorkRan) {
  const int aborts = FakeCalls("ncclCommAbort");
  Recording().device_uses_ended = true;
  EXPECT_EQ(ncclCommAbort(comm_), ncclSuccess);
  comm_ = nullptr;
  EXPECT_EQ(Recording().aborts, 1);
  EXPECT_EQ(FakeCalls("ncclCommAbort"), aborts + 1);
  EXPECT_EQ(Recording().live, 1) << "abort freed zpp's state on the spot";
  // A restart: the next communicator's creation frees it, once its device work ran.
  Recording().device_uses_ended = false;
  ncclUniqueId id{};
  for (int restart = 0; restart < 3; ++restart) {
    ncclComm_t again = nullptr;
    ASSERT_EQ(ncclCommInitRank(&again, 4, id, 1), ncclSuccess);
    EXPECT_EQ(Recording().live, 2) << "freed while its device work may still run";
    Recording().device_uses_ended = true;
    ASSERT_EQ(ncclCommAbort(again), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comm_, 4, id, 1), ncclSuccess);
    EXPECT_EQ(Recording().live, 1) << "restart " << restart << " kept the aborted states";
    Recording().device_uses_ended = false;
    ASSERT_EQ(ncclCommAbort(comm_), ncclSuccess);
    comm_ = nullptr;
  }
  EXPECT_EQ(Recording().live, 1);
  Recording().device_uses_ended = true;
  ASSERT_EQ(ncclCommInitRank(&comm_, 4, id, 1), ncclSuccess);
  EXPECT_EQ(Recording().live, 1);  // TearDown's destroy ends at 0
}

// PyTorch's watchdog aborts from its own thread while the training thread may be inside a zpp
// call: abort returns while the call runs, and the call's communicator stays alive under it.
// `call` makes one zpp call on `comm` (named `nccl_name` in the stand-in NCCL's counts), and
// `recorded` counts those zpp ran.
void AbortDuringCall(const std::function<ncclResult_t(ncclComm_t)>& call, const char* nccl_name,
                     const std::function<size_t()>& recorded) {
  Recording() = {};
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  ASSERT_EQ(ncclCommInitRank(&comm, 4, id, 1), ncclSuccess);
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  Recording().during_call = [&entered, released] {
    entered.set_value();
    released.wait();
  };
  ncclResult_t call_result = ncclInternalError;
  std::thread training([&] { call_result = call(comm); });
  entered.get_future().wait();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(Recording().aborts, 1);
  EXPECT_EQ(Recording().live, 1) << "abort freed zpp's state under a running call";
  release.set_value();
  training.join();
  EXPECT_EQ(call_result, ncclSuccess);
  EXPECT_EQ(Recording().live, 1) << "abort's state was freed after the call";
  // The aborted communicator is not zpp's any more: a later call is NCCL's to answer (zpp
  // cannot tell it from a communicator made at the same address by a hook it does not have).
  const int forwarded = FakeCalls(nccl_name);
  call(comm);
  EXPECT_EQ(FakeCalls(nccl_name), forwarded + 1);
  EXPECT_EQ(recorded(), 1u) << "an aborted communicator ran zpp's plan";
  Recording().device_uses_ended = true;
  ASSERT_EQ(ncclCommInitRank(&comm, 4, id, 1), ncclSuccess);  // frees the aborted state
  ASSERT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(Recording().live, 0);
  Recording() = {};
}

TEST(DecisionAbortTest, AbortFromAnotherThreadDuringACall) {
  std::vector<float> data(kLarge * 4);
  AbortDuringCall(
      [&](ncclComm_t comm) {
        return ncclAllGather(data.data(), data.data(), kLarge, ncclFloat32, comm, nullptr);
      },
      "ncclAllGather", [] { return Recording().all_gathers.size(); });
}

// The same with DDP's in-place all-reduce as the call under way.
TEST(DecisionAbortTest, AbortFromAnotherThreadDuringAnAllReduce) {
  std::vector<float> data(kLarge);
  AbortDuringCall(
      [&](ncclComm_t comm) {
        return ncclAllReduce(data.data(), data.data(), kLarge, ncclFloat32, ncclSum, comm, nullptr);
      },
      "ncclAllReduce", [] { return Recording().all_reduces.size(); });
}

// A non-blocking communicator: creation answers ncclInProgress, zpp sets up at the first
// all-gather or reduce-scatter outside a group, on a blocking duplicate of it, and runs its plans
// there; calls before that pass through with the reason counted.
TEST(DecisionNonblockingTest, SetsUpAtTheFirstCallOnABlockingDuplicate) {
  Recording() = {};
  ncclComm_t comm = NonblockingComm();
  EXPECT_EQ(Recording().live, 0) << "set up before the communicator was ready";
  std::vector<float> data(kLarge * 4);
  // Inside a group zpp cannot set up: the call goes to NCCL.
  const int gathers = FakeCalls("ncclAllGather");
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(data.data(), data.data(), kLarge, ncclFloat32, comm, nullptr),
            ncclSuccess);
  const ncclResult_t group_end = ncclGroupEnd();
  EXPECT_TRUE(group_end == ncclSuccess || group_end == ncclInProgress) << group_end;
  EXPECT_EQ(FakeCalls("ncclAllGather"), gathers + 1);
  zppStats_t stats{};
  ASSERT_EQ(zppGetCommStats(comm, &stats), ncclSuccess);
  EXPECT_EQ(stats.passthrough[zppReasonNonblocking], 1u);

  const int splits = FakeCalls("ncclCommSplit");
  EXPECT_EQ(ncclAllGather(data.data(), data.data(), kLarge, ncclFloat32, comm, nullptr),
            ncclSuccess);
  EXPECT_EQ(FakeCalls("ncclCommSplit"), splits + 1);
  ASSERT_EQ(Recording().setup_comms.size(), 1u);
  EXPECT_NE(Recording().setup_comms[0], comm) << "zpp must run on a blocking duplicate";
  EXPECT_EQ(Recording().live, 1);
  ASSERT_EQ(Recording().all_gathers.size(), 1u);
  EXPECT_FALSE(Recording().nccl_busy_at_call[0]);
  EXPECT_EQ(FakeCalls("ncclAllGather"), gathers + 1);
  EXPECT_EQ(
      ncclReduceScatter(data.data(), data.data(), kLarge, ncclFloat32, ncclSum, comm, nullptr),
      ncclSuccess);
  EXPECT_EQ(Recording().reduce_scatters.size(), 1u);
  const int all_reduces = FakeCalls("ncclAllReduce");
  EXPECT_EQ(ncclAllReduce(data.data(), data.data(), kLarge, ncclFloat32, ncclSum, comm, nullptr),
            ncclSuccess);
  EXPECT_EQ(Recording().all_reduces.size(), 1u);
  EXPECT_EQ(FakeCalls("ncclAllReduce"), all_reduces);

  const int destroys = FakeCalls("ncclCommDestroy");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(Recording().live, 0);
  EXPECT_EQ(FakeCalls("ncclCommDestroy"), destroys + 2) << "the duplicate was not destroyed";
}

// Issue 25, item 6: PyTorch's watchdog polls ncclCommGetAsyncError (and the stats) from its own
// thread, without the lock the training thread holds, while that thread sets zpp up on a
// non-blocking communicator at its first call and runs calls; then the watchdog aborts. Under
// `make tsan` this is the check that the registry's state, zpp's set-up and the aborted states
// are race-free; here it checks the outcomes.
TEST(DecisionWatchdogTest, PollsFromAnotherThreadDuringSetUpCallsAndAbort) {
  Recording() = {};
  ncclComm_t comm = NonblockingComm();
  std::atomic<bool> stop{false};
  std::atomic<int> polls{0}, bad_polls{0};
  std::thread watchdog([&] {
    while (!stop.load()) {
      ncclResult_t error = ncclInternalError;
      const ncclResult_t polled = ncclCommGetAsyncError(comm, &error);
      if (polled != ncclSuccess || (error != ncclSuccess && error != ncclInProgress)) ++bad_polls;
      zppStats_t stats{};
      zppGetCommStats(comm, &stats);
      ++polls;
      std::this_thread::yield();
    }
  });
  std::vector<float> data(kLarge * 4);
  for (int call = 0; call < 50; ++call) {
    EXPECT_EQ(ncclAllGather(data.data(), data.data(), kLarge, ncclFloat32, comm, nullptr),
              ncclSuccess);
    EXPECT_EQ(
        ncclReduceScatter(data.data(), data.data(), kLarge, ncclFloat32, ncclSum, comm, nullptr),
        ncclSuccess);
  }
  while (polls.load() < 100) std::this_thread::yield();
  stop = true;
  watchdog.join();
  EXPECT_EQ(bad_polls.load(), 0);
  EXPECT_EQ(Recording().all_gathers.size(), 50u);
  EXPECT_EQ(Recording().reduce_scatters.size(), 50u);
  // The watchdog's abort, from its own thread (DecisionAbortTest has it during a call).
  std::thread aborter([&] { EXPECT_EQ(ncclCommAbort(comm), ncclSuccess); });
  aborter.join();
  Recording().device_uses_ended = true;
  ncclComm_t next = nullptr;
  ncclUniqueId id{};
  ASSERT_EQ(ncclCommInitRank(&next, 4, id, 1), ncclSuccess);  // frees the aborted state
  ASSERT_EQ(ncclCommDestroy(next), ncclSuccess);
  EXPECT_EQ(Recording().live, 0);
  Recording() = {};
}

// A group holding a zpp call and work on a non-blocking communicator: NCCL's group end answers
// ncclInProgress while it still launches that work, and zpp's plan must run after it, not be
// dropped (its peers would wait for it).
TEST_F(DecisionTest, GroupEndInProgressStillRunsZppCallsAfterNcclsWork) {
  ncclComm_t nonblocking = NonblockingComm();
  std::vector<float> small(64);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclAllGather(small.data(), small.data(), 16, ncclFloat32, nonblocking, nullptr),
            ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  ASSERT_EQ(Recording().all_gathers.size(), 1u) << "the group's zpp call did not run";
  EXPECT_FALSE(Recording().nccl_busy_at_call[0]) << "zpp's plan ran before NCCL's group work";
  EXPECT_EQ(ncclCommDestroy(nonblocking), ncclSuccess);
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

// ZPP_TUNE=auto on GPUs (engine/auto_tuner.h): a call outside groups and captures first lets the
// tuner advance at a new step epoch, then runs timed, whether zpp's plan runs or the table sent
// the call to NCCL (the trials need both times).
TEST_F(DecisionTest, TunedCallsAdvanceBeforeTheirPlanAndRunTimed) {
  Recording().tuned = true;
  Recording().tuned_to_nccl_below = kLarge;
  ASSERT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge / 2, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(Recording().at_calls, 2);
  ASSERT_EQ(Recording().timed.size(), 2u);
  EXPECT_NE(Recording().timed[0].ran.kind, zpp::plan::PlanKind::kPassThrough);
  EXPECT_EQ(Recording().timed[0].zpp_calls_inside, 1);
  EXPECT_EQ(Recording().timed[0].nccl_calls_inside, 0);
  EXPECT_EQ(Recording().timed[1].ran.kind, zpp::plan::PlanKind::kPassThrough);
  EXPECT_EQ(Recording().timed[1].ran.reason, zppReasonTuned);
  EXPECT_EQ(Recording().timed[1].nccl_calls_inside, 1);
  EXPECT_EQ(Recording().timed[1].zpp_calls_inside, 0);
  EXPECT_EQ(Reason(zppReasonTuned), 1u);
}

// A group's calls run at its end and a captured call when its graph is launched: neither is
// timed nor moves the tuner on; an untuned communicator times nothing.
TEST_F(DecisionTest, GroupedCapturedAndUntunedCallsAreNotTimed) {
  Recording().tuned = true;
  Recording().tuned_to_nccl_below = kLarge;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge / 2, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  Recording().capturing = true;
  ASSERT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge / 2, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  Recording().capturing = false;
  Recording().tuned = false;
  ASSERT_EQ(ncclAllGather(send_.data(), recv_.data(), kLarge, ncclFloat32, comm_, nullptr),
            ncclSuccess);
  EXPECT_EQ(Recording().at_calls, 0);
  EXPECT_TRUE(Recording().timed.empty());
  EXPECT_EQ(Recording().all_gathers.size(), 2u);
  EXPECT_EQ(Reason(zppReasonTuned), 2u);
}

}  // namespace
