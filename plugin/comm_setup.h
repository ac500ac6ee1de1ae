// What the creation hooks do after NCCL made a communicator: register it and, at this safe
// point, set zpp up on it (or say why not). A non-blocking communicator is not ready when its
// creation returns (ncclInProgress): zpp sets up at its first eligible collective instead.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "nccl_runtime/nccl_functions.h"
#include "plugin/comm_registry.h"

namespace zpp::plugin {

// Whether a communicator created with `config` blocks: config->blocking when set, otherwise
// NCCL's NCCL_COMM_BLOCKING, otherwise `inherited` (a split's parent) or yes.
bool BlockingOf(const ncclConfig_t* config, bool inherited);

// Registers `comm` and, when it can, sets zpp up on it. `how` names the creation call for logs.
// Never fails the creation: a failed set-up only means that the communicator passes through.
void AfterCreation(const NcclFunctions& nccl, ncclComm_t comm, bool blocking, const char* how);

// A creation zpp cannot set up collectively (ncclCommInitAll: one thread, many ranks).
void RegisterPassThroughOnly(const NcclFunctions& nccl, ncclComm_t comm, const char* why);

// A non-blocking communicator's deferred set-up, at a collective every rank makes at the same
// point (an intercepted call outside any group, not capturing): true when zpp is now set up.
// Runs once per communicator; later calls answer from its outcome.
bool SetUpPending(const NcclFunctions& nccl, CommState& state);

}  // namespace zpp::plugin
