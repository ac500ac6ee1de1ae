#include "recording_communicator.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "fake_nccl_calls.h"
#include "plan/planner.h"

namespace zpp {
namespace {

// Whether the stand-in NCCL still has work in progress on any communicator: a zpp plan that ran
// then would have gone on the stream ahead of NCCL's own work.
bool NcclBusy() {
  void* fake = dlopen(ZPP_FAKE_NCCL, RTLD_NOW | RTLD_NOLOAD);
  if (fake == nullptr) return false;
  auto busy = reinterpret_cast<int (*)(ncclComm_t)>(dlsym(fake, "fakeNcclInProgress"));
  const bool answer = busy != nullptr && busy(nullptr) != 0;
  dlclose(fake);
  return answer;
}

int NcclCollectives() {
  return test::FakeCalls("ncclAllGather") + test::FakeCalls("ncclReduceScatter") +
         test::FakeCalls("ncclAllReduce");
}

size_t ZppCollectives() {
  const test::Recorded& recorded = test::Recording();
  return recorded.all_gathers.size() + recorded.reduce_scatters.size() +
         recorded.all_reduces.size();
}

void Record() {
  test::Recording().nccl_busy_at_call.push_back(NcclBusy());
  if (test::Recording().during_call) test::Recording().during_call();
}

class RecordingCommunicator final : public ZppCommunicator {
 public:
  RecordingCommunicator() {
    shape_.world = 4;
    shape_.nodes = 2;
    shape_.min_local_size = 2;
    shape_.hierarchical_allowed = true;
    settings_ = plan::SettingsFrom(GetConfig());
    ++test::Recording().live;
  }
  ~RecordingCommunicator() override { --test::Recording().live; }

  plan::Plan Decide(const plan::Call& call) const override {
    plan::Plan plan = plan::MakePlan(call, shape_, settings_, {});
    if (test::Recording().tuned && plan.kind != plan::PlanKind::kPassThrough &&
        call.count < test::Recording().tuned_to_nccl_below) {
      plan.kind = plan::PlanKind::kPassThrough;
      plan.reason = zppReasonTuned;
    }
    return plan;
  }
  bool Tuned() const override { return test::Recording().tuned; }
  Result AtCall() override {
    ++test::Recording().at_calls;
    return ncclSuccess;
  }
  Result Timed(const plan::Call&, cudaStream_t,
               const std::function<Result(plan::Plan* ran)>& run) override {
    test::Recorded& recorded = test::Recording();
    const int nccl_before = NcclCollectives();
    const size_t zpp_before = ZppCollectives();
    test::Recorded::Timed timed;
    const Result result = run(&timed.ran);
    timed.nccl_calls_inside = NcclCollectives() - nccl_before;
    timed.zpp_calls_inside = static_cast<int>(ZppCollectives() - zpp_before);
    recorded.timed.push_back(timed);
    return result;
  }
  Result AllGather(const plan::Plan& plan, const engine::AllGatherArgs& args, cudaStream_t,
                   plan::Plan* ran) override {
    if (ran != nullptr) *ran = plan;
    EXPECT_EQ(plan.kind, Decide(engine::CallOf(args)).kind);  // the plan the hook made
    Record();
    test::Recording().all_gathers.push_back(args);
    return ncclSuccess;
  }
  Result ReduceScatter(const plan::Plan& plan, const engine::ReduceScatterArgs& args, cudaStream_t,
                       plan::Plan* ran) override {
    if (ran != nullptr) *ran = plan;
    EXPECT_EQ(plan.kind, Decide(engine::CallOf(args)).kind);
    Record();
    test::Recording().reduce_scatters.push_back(args);
    return ncclSuccess;
  }
  Result AllReduce(const plan::Plan& plan, const engine::AllReduceArgs& args, cudaStream_t,
                   plan::Plan* ran) override {
    if (ran != nullptr) *ran = plan;
    EXPECT_EQ(plan.kind, Decide(engine::CallOf(args)).kind);
    Record();
    test::Recording().all_reduces.push_back(args);
    return ncclSuccess;
  }
  void Abort() override { ++test::Recording().aborts; }
  Result DeviceUsesEnded(bool* ended) override {
    *ended = test::Recording().device_uses_ended;
    return ncclSuccess;
  }
  Result AsyncError() const override { return test::Recording().async_error; }
  bool ReadHpzChecks(uint64_t* failures, uint64_t* choices) const override {
    *failures = test::Recording().hpz_failures;
    *choices = test::Recording().hpz_choices;
    return true;
  }

 private:
  plan::Shape shape_;
  plan::Settings settings_;
};

}  // namespace

Result SetUpZppCommunicator(const NcclFunctions&, ncclComm_t comm, StatsCounters&,
                            std::unique_ptr<ZppCommunicator>* out, std::string* why_not) {
  test::Recording().setup_comms.push_back(comm);
  if (test::Recording().fail_setup) {
    *why_not = "set-up failed on purpose";
    return ncclSystemError;
  }
  *out = std::make_unique<RecordingCommunicator>();
  return ncclSuccess;
}

bool StreamCapturing(cudaStream_t) { return test::Recording().capturing; }

namespace test {

Recorded& Recording() {
  static Recorded recorded;
  return recorded;
}

}  // namespace test
}  // namespace zpp
