// Non-blocking communicators (ncclConfig_t.blocking = 0; PyTorch's
// TORCH_NCCL_USE_COMM_NONBLOCKING=1): NCCL answers ncclInProgress from creation, split, group
// end and collectives, and the caller polls ncclCommGetAsyncError until the state is final
// before the next call on that communicator. zpp's plans are written for a communicator whose
// calls have been enqueued when they return, so zpp runs them on a blocking duplicate of the
// user's communicator (one ncclCommSplit at set-up), on the caller's stream: stream order keeps
// them in line with the user's own calls on the non-blocking one.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>

#include "cuda_nccl/zpp_communicator.h"
#include "nccl_runtime/nccl_functions.h"

namespace zpp::plugin {

// Polls ncclCommGetAsyncError until `comm` has nothing in progress: its final state, or
// ncclInProgress after ZPP_TIMEOUT seconds (one WARN).
ncclResult_t WaitUntilReady(const NcclFunctions& nccl, ncclComm_t comm);

// A blocking duplicate of the ready non-blocking `comm` (all ranks call this at the same point).
Result SplitBlockingDuplicate(const NcclFunctions& nccl, ncclComm_t comm, int rank,
                              ncclComm_t* duplicate);

// zpp's communicator over a duplicate it owns: aborted with it, destroyed after it.
std::unique_ptr<ZppCommunicator> OwningDuplicate(const NcclFunctions& nccl, ncclComm_t duplicate,
                                                 std::unique_ptr<ZppCommunicator> inner);

}  // namespace zpp::plugin
