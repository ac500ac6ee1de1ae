#include "plugin/comm_setup.h"

#include <cstdlib>
#include <string>

#include "log/log.h"
#include "plugin/group_state.h"

namespace zpp::plugin {
namespace {

void Identify(const NcclFunctions& nccl, ncclComm_t comm, int* rank, int* nranks) {
  *rank = 0;
  *nranks = 1;
  if (nccl.CommUserRank(comm, rank) != ncclSuccess) *rank = 0;
  if (nccl.CommCount(comm, nranks) != ncclSuccess) *nranks = 1;
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
  int rank = 0, nranks = 1;
  if (blocking) Identify(nccl, comm, &rank, &nranks);
  const std::shared_ptr<CommState> state = Comms().Add(comm, rank, nranks, blocking);
  log::ScopedRank scoped_rank(rank);
  if (!blocking) {
    state->unavailable = "nonblocking communicator (config.blocking = 0): its calls pass through";
  } else if (nranks < 2) {
    state->unavailable = "one rank: its calls pass through";
  } else if (ThisThreadGroup().depth > 0) {
    state->unavailable = std::string("created by ") + how +
                         " inside ncclGroupStart/End: zpp cannot set up there, calls pass through";
  } else {
    std::string why_not;
    if (SetUpZppCommunicator(nccl, comm, state->stats, &state->zpp, &why_not) != ncclSuccess) {
      state->zpp.reset();
      state->unavailable = why_not;
      ZPP_WARN("zpp: communicator %p (%s, rank %d of %d): %s; its calls pass through to NCCL",
               static_cast<void*>(comm), how, rank, nranks, why_not.c_str());
      return;
    }
  }
  if (state->zpp == nullptr) {
    ZPP_INFO(kPlugin, "communicator %p (%s): %s", static_cast<void*>(comm), how,
             state->unavailable.c_str());
  } else {
    ZPP_INFO(kPlugin, "communicator %p (%s): zpp set up, rank %d of %d", static_cast<void*>(comm),
             how, rank, nranks);
  }
}

void RegisterPassThroughOnly(const NcclFunctions& nccl, ncclComm_t comm, const char* why) {
  int rank = 0, nranks = 1;
  Identify(nccl, comm, &rank, &nranks);
  const std::shared_ptr<CommState> state = Comms().Add(comm, rank, nranks, true);
  state->unavailable = why;
  ZPP_INFO(kPlugin, "communicator %p: %s", static_cast<void*>(comm), why);
}

}  // namespace zpp::plugin
