#include "plugin/comm_setup.h"

#include <cstdlib>
#include <string>

#include "config/config.h"
#include "log/log.h"
#include "plugin/group_state.h"
#include "plugin/nonblocking.h"

namespace zpp::plugin {
namespace {

void Identify(const NcclFunctions& nccl, ncclComm_t comm, int* rank, int* nranks) {
  *rank = 0;
  *nranks = 1;
  if (nccl.CommUserRank(comm, rank) != ncclSuccess) *rank = 0;
  if (nccl.CommCount(comm, nranks) != ncclSuccess) *nranks = 1;
}

// zpp's set-up on `comm` (every rank at the same point). On failure the state says why.
void SetUp(const NcclFunctions& nccl, CommState& state, ncclComm_t comm, const char* how) {
  std::unique_ptr<ZppCommunicator> zpp;
  std::string why_not;
  if (SetUpZppCommunicator(nccl, comm, state.stats, &zpp, &why_not) != ncclSuccess) {
    state.TakeZpp(why_not);
    ZPP_WARN(
        "zpp: communicator %p (%s, rank %d of %d): %s; its calls pass through to NCCL (run with "
        "ZPP_DEBUG=INFO for each set-up step and the reason)",
        static_cast<void*>(state.comm), how, state.rank, state.nranks, why_not.c_str());
    return;
  }
  if (comm != state.comm) zpp = OwningDuplicate(nccl, comm, std::move(zpp));
  state.SetZpp(std::move(zpp));
  ZPP_INFO(kPlugin, "communicator %p (%s): zpp set up, rank %d of %d",
           static_cast<void*>(state.comm), how, state.rank, state.nranks);
}

}  // namespace

bool BlockingOf(const ncclConfig_t* config, bool inherited) {
  if (config != nullptr && config->blocking != NCCL_CONFIG_UNDEF_INT) return config->blocking != 0;
  // NCCL's own variable (not a zpp one): it sets the default of config.blocking.
  if (const char* env = std::getenv("NCCL_COMM_BLOCKING"); env != nullptr && *env != '\0') {
    return std::atoi(env) != 0;
  }
  return inherited;
}

void AfterCreation(const NcclFunctions& nccl, ncclComm_t comm, bool blocking, const char* how) {
  ReportConfigOnce();
  int rank = 0, nranks = 1;
  if (blocking) Identify(nccl, comm, &rank, &nranks);
  const std::shared_ptr<CommState> state = Comms().Add(comm, rank, nranks, blocking);
  log::ScopedRank scoped_rank(rank);
  if (!blocking) {
    state->TakeZpp(
        "nonblocking communicator: zpp sets up at its first all-gather or reduce-scatter outside "
        "a group; calls before pass through");
    state->setup_pending = true;
  } else if (nranks < 2) {
    state->TakeZpp("one rank: its calls pass through");
  } else if (ThisThreadGroup().depth > 0) {
    state->TakeZpp(std::string("created by ") + how +
                   " inside ncclGroupStart/End: zpp cannot set up there, calls pass through");
  } else {
    SetUp(nccl, *state, comm, how);
    return;
  }
  ZPP_INFO(kPlugin, "communicator %p (%s): %s", static_cast<void*>(comm), how,
           state->Unavailable().c_str());
}

bool SetUpPending(const NcclFunctions& nccl, CommState& state) {
  if (!state.setup_pending.exchange(false)) return state.Zpp() != nullptr;
  const ncclResult_t ready = WaitUntilReady(nccl, state.comm);
  if (ready != ncclSuccess) {
    state.TakeZpp("nonblocking communicator not ready at its first collective (" +
                  std::to_string(static_cast<int>(ready)) + "): its calls pass through");
    ZPP_WARN(
        "zpp: communicator %p: %s (a WARN above, ncclCommGetAsyncError or NCCL_DEBUG=WARN shows "
        "why)",
        static_cast<void*>(state.comm), state.Unavailable().c_str());
    return false;
  }
  Identify(nccl, state.comm, &state.rank, &state.nranks);
  log::ScopedRank scoped_rank(state.rank);
  if (state.nranks < 2) {
    state.TakeZpp("one rank: its calls pass through");
    return false;
  }
  ncclComm_t duplicate = nullptr;
  if (const Result split = SplitBlockingDuplicate(nccl, state.comm, state.rank, &duplicate);
      split != ncclSuccess) {
    state.TakeZpp("nonblocking communicator: its blocking duplicate could not be made (" +
                  std::to_string(static_cast<int>(split)) + "): its calls pass through");
    ZPP_WARN("zpp: communicator %p: %s (a WARN above, NCCL_DEBUG=WARN or ZPP_DEBUG=INFO shows why)",
             static_cast<void*>(state.comm), state.Unavailable().c_str());
    return false;
  }
  SetUp(nccl, state, duplicate, "nonblocking, on a blocking duplicate");
  if (state.Zpp() == nullptr && nccl.CommDestroy != nullptr) nccl.CommDestroy(duplicate);
  return state.Zpp() != nullptr;
}

void RegisterPassThroughOnly(const NcclFunctions& nccl, ncclComm_t comm, const char* why) {
  ReportConfigOnce();
  int rank = 0, nranks = 1;
  Identify(nccl, comm, &rank, &nranks);
  const std::shared_ptr<CommState> state = Comms().Add(comm, rank, nranks, true);
  state->TakeZpp(why);
  ZPP_INFO(kPlugin, "communicator %p: %s", static_cast<void*>(comm), why);
}

}  // namespace zpp::plugin
