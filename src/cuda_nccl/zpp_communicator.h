// zpp on one NCCL communicator: its topology, the configuration all its ranks agreed on, the
// sub-communicators the plans run on and the engine, over the cuda_nccl backend. The plugin
// makes one right after the communicator is created (a safe point: every rank is there, no group
// is open, nothing is capturing) and hands it each call the planner does not pass through.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <string>

#include "engine/collective_args.h"
#include "engine/engine.h"
#include "log/check.h"
#include "nccl_runtime/nccl_functions.h"
#include "plan/plan.h"
#include "stats/stats.h"

namespace zpp {

class ZppCommunicator {
 public:
  virtual ~ZppCommunicator() = default;

  // The plan a call gets on this communicator (the same on every rank: contract 3).
  virtual plan::Plan Decide(const plan::Call& call) const = 0;

  // NCCL's semantics on `stream`, for calls whose plan (from Decide) is not a pass-through;
  // `ran`, when given, receives the plan that ran. Buffers that overlap other than in NCCL's
  // in-place layout are handled (the input is staged first).
  virtual Result AllGather(const plan::Plan& plan, const engine::AllGatherArgs& args,
                           cudaStream_t stream, plan::Plan* ran) = 0;
  virtual Result ReduceScatter(const plan::Plan& plan, const engine::ReduceScatterArgs& args,
                               cudaStream_t stream, plan::Plan* ran) = 0;
  virtual Result AllReduce(const plan::Plan& plan, const engine::AllReduceArgs& args,
                           cudaStream_t stream, plan::Plan* ran) = 0;

  // ZPP_TUNE=auto (engine/auto_tuner.h): whether this communicator's calls are tuned, and so
  // timed; the same on every rank.
  virtual bool Tuned() const { return false; }
  // Whether its trials are still running (zpp-bench runs them before it measures).
  virtual bool TrialsRunning() const { return false; }
  // Before a call is planned, where every rank makes the same call outside NCCL groups and graph
  // captures: a new step epoch's read-back, agreement and next table (one host wait an epoch).
  virtual Result AtCall() { return ncclSuccess; }
  // `run` enqueues one call on `stream`, zpp's plan or NCCL's where the table sent it there,
  // and reports the plan that ran; timed for the trials and the drift watch.
  virtual Result Timed(const plan::Call& /*call*/, cudaStream_t /*stream*/,
                       const std::function<Result(plan::Plan* ran)>& run) {
    plan::Plan ran;
    return run(&ran);
  }

  // The parent communicator is being aborted: abort the sub-communicators too (the destructor
  // destroys them otherwise).
  virtual void Abort() = 0;

  // After Abort: whether every device use of zpp's memory on this communicator has run, asked
  // without waiting (its fences' events). The plugin frees an aborted communicator's state only
  // then, so that the free never waits on the device (it may be stuck: that is why the job
  // aborts). An error answers false and the state is kept.
  virtual Result DeviceUsesEnded(bool* ended) = 0;

  // The first error one of zpp's sub-communicators reports (ncclCommGetAsyncError), so that the
  // parent's poll shows it: PyTorch's watchdog then aborts instead of waiting on a hang. Safe to
  // call from any thread, at any time; ncclSuccess after an abort.
  virtual Result AsyncError() const = 0;

  // hpZ's cumulative check counters (Engine::ReadHpzChecks), for the step guard; whether this
  // communicator runs hpZ (the same on every rank: it follows the agreed settings). Any thread.
  virtual bool ReadHpzChecks(uint64_t* failures, uint64_t* choices) const {
    *failures = *choices = 0;
    return false;
  }
};

// Collective over `comm`: every rank must call it, right after the communicator is created.
// On failure *why_not says why and the communicator's calls pass through to NCCL. The engine's
// options come from the process configuration (ZPP_*).
Result SetUpZppCommunicator(const NcclFunctions& nccl, ncclComm_t comm, StatsCounters& stats,
                            std::unique_ptr<ZppCommunicator>* out, std::string* why_not);

// The same with the engine's options given (zpp-bench runs several modes on one communicator).
Result SetUpZppCommunicatorWith(const engine::EngineOptions& options, const NcclFunctions& nccl,
                                ncclComm_t comm, StatsCounters& stats,
                                std::unique_ptr<ZppCommunicator>* out, std::string* why_not);

// True when `stream` is capturing a CUDA graph (always false in a build without CUDA).
bool StreamCapturing(cudaStream_t stream);

}  // namespace zpp
