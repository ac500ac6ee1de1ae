// NCCL's groups, per thread: NCCL launches the calls made between ncclGroupStart and the
// outermost ncclGroupEnd only at that end, so a zpp plan cannot run where its call is made (a
// dequantize enqueued after a deferred gather would read garbage; contract 4). zpp defers its
// plans the same way: they run in call order right after the real outermost ncclGroupEnd has
// launched the rest of the group, on the streams they were called with. Every rank groups the
// same calls, so every rank runs the same plans in the same order.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <variant>
#include <vector>

#include "engine/collective_args.h"
#include "plugin/comm_registry.h"

namespace zpp::plugin {

using CollectiveArgs =
    std::variant<engine::AllGatherArgs, engine::ReduceScatterArgs, engine::AllReduceArgs>;

// One of zpp's collectives on its communicator, with the plan it was given when called. It holds
// zpp's communicator, so that an abort on another thread never frees it under the call.
struct ZppCall {
  std::shared_ptr<CommState> state;
  std::shared_ptr<ZppCommunicator> zpp;
  plan::Plan plan;
  CollectiveArgs args;
  cudaStream_t stream = nullptr;
  // The same call, unchanged, to the real NCCL: what a simulated group (ncclGroupSimulateEnd)
  // hands NCCL to estimate, since a simulation runs nothing of zpp's.
  std::function<ncclResult_t()> to_nccl;
};

// Runs `call` now, on the communicator it holds; `ran`, when given, receives the plan that ran.
ncclResult_t RunZppCall(const ZppCall& call, plan::Plan* ran = nullptr);

struct GroupState {
  int depth = 0;  // open ncclGroupStart calls
  std::vector<ZppCall> deferred;
};

GroupState& ThisThreadGroup();

// Runs `calls` in order; the first failure is returned (later calls still run: the other ranks
// run theirs, and a rank that skipped some would leave them waiting).
ncclResult_t RunDeferred(std::vector<ZppCall> calls);

}  // namespace zpp::plugin
