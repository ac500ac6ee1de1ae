#include "plugin/nonblocking.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "config/config.h"
#include "log/log.h"

namespace zpp::plugin {
namespace {

class DuplicateOwner final : public ZppCommunicator {
 public:
  DuplicateOwner(const NcclFunctions& nccl, ncclComm_t duplicate,
                 std::unique_ptr<ZppCommunicator> inner)
      : nccl_(nccl), duplicate_(duplicate), inner_(std::move(inner)) {}
  ~DuplicateOwner() override {
    inner_.reset();  // its sub-communicators (split from the duplicate) go first
    if (!aborted_ && nccl_.CommDestroy != nullptr) nccl_.CommDestroy(duplicate_);
  }
  plan::Plan Decide(const plan::Call& call) const override { return inner_->Decide(call); }
  Result AllGather(const plan::Plan& plan, const engine::AllGatherArgs& args, cudaStream_t stream,
                   plan::Plan* ran) override {
    return inner_->AllGather(plan, args, stream, ran);
  }
  Result ReduceScatter(const plan::Plan& plan, const engine::ReduceScatterArgs& args,
                       cudaStream_t stream, plan::Plan* ran) override {
    return inner_->ReduceScatter(plan, args, stream, ran);
  }
  Result AllReduce(const plan::Plan& plan, const engine::AllReduceArgs& args, cudaStream_t stream,
                   plan::Plan* ran) override {
    return inner_->AllReduce(plan, args, stream, ran);
  }
  bool Tuned() const override { return inner_->Tuned(); }
  bool TrialsRunning() const override { return inner_->TrialsRunning(); }
  Result AtCall() override { return inner_->AtCall(); }
  Result Timed(const plan::Call& call, cudaStream_t stream,
               const std::function<Result(plan::Plan* ran)>& run) override {
    return inner_->Timed(call, stream, run);
  }
  void Abort() override {
    std::lock_guard<std::mutex> lock(abort_mutex_);  // no poll of the duplicate as NCCL frees it
    inner_->Abort();
    if (nccl_.CommAbort != nullptr) nccl_.CommAbort(duplicate_);
    aborted_ = true;
  }
  Result DeviceUsesEnded(bool* ended) override { return inner_->DeviceUsesEnded(ended); }
  bool ReadHpzChecks(uint64_t* failures, uint64_t* choices) const override {
    *failures = *choices = 0;
    return inner_ && inner_->ReadHpzChecks(failures, choices);
  }
  Result AsyncError() const override {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (aborted_) return ncclSuccess;
    if (const Result inner = inner_->AsyncError(); inner != ncclSuccess) return inner;
    ncclResult_t error = ncclSuccess;
    if (nccl_.CommGetAsyncError == nullptr ||
        nccl_.CommGetAsyncError(duplicate_, &error) != ncclSuccess) {
      return ncclSuccess;
    }
    return error == ncclInProgress ? ncclSuccess : error;
  }

 private:
  const NcclFunctions& nccl_;
  ncclComm_t duplicate_;
  std::unique_ptr<ZppCommunicator> inner_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mutex_;
};

}  // namespace

ncclResult_t WaitUntilReady(const NcclFunctions& nccl, ncclComm_t comm) {
  if (nccl.CommGetAsyncError == nullptr) return ncclSuccess;  // an NCCL without the call blocks
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(GetConfig().timeout);
  auto pause = std::chrono::microseconds(1);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t polled = nccl.CommGetAsyncError(comm, &state);
    if (polled != ncclSuccess) return polled;
    if (state != ncclInProgress) return state;
    if (std::chrono::steady_clock::now() > deadline) {
      ZPP_WARN(
          "communicator %p still has work in progress after ZPP_TIMEOUT=%lld s; zpp stops "
          "waiting: the zpp calls that waited on it pass through or fail with "
          "ncclInProgress (raise ZPP_TIMEOUT if NCCL needs longer)",
          static_cast<void*>(comm), static_cast<long long>(GetConfig().timeout));
      return ncclInProgress;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

Result SplitBlockingDuplicate(const NcclFunctions& nccl, ncclComm_t comm, int rank,
                              ncclComm_t* duplicate) {
  ZPP_CHECK_ARG(nccl.CommSplit != nullptr,
                "nonblocking communicator: the loaded NCCL has no ncclCommSplit for zpp's blocking "
                "duplicate; its calls pass through to NCCL (use an NCCL with ncclCommSplit, or "
                "set ZPP_NCCL_LIBRARY to one)");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  *duplicate = nullptr;
  // The duplicate is zpp's own: created through the real NCCL, never registered by the hooks.
  const ncclResult_t split = nccl.CommSplit(comm, 0, rank, duplicate, &config);
  if (split != ncclSuccess && split != ncclInProgress) return split;
  if (*duplicate == nullptr) return ncclInternalError;
  if (split == ncclInProgress) {
    const ncclResult_t ready = WaitUntilReady(nccl, *duplicate);
    if (ready != ncclSuccess) {
      if (nccl.CommAbort != nullptr) nccl.CommAbort(*duplicate);
      *duplicate = nullptr;
      return ready == ncclInProgress ? ncclSystemError : ready;
    }
  }
  return ncclSuccess;
}

std::unique_ptr<ZppCommunicator> OwningDuplicate(const NcclFunctions& nccl, ncclComm_t duplicate,
                                                 std::unique_ptr<ZppCommunicator> inner) {
  return std::make_unique<DuplicateOwner>(nccl, duplicate, std::move(inner));
}

}  // namespace zpp::plugin
