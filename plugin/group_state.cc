#include "plugin/group_state.h"

#include "log/log.h"

namespace zpp::plugin {

GroupState& ThisThreadGroup() {
  thread_local GroupState group;
  return group;
}

ncclResult_t RunDeferred(std::vector<DeferredCall> calls) {
  ncclResult_t first_failure = ncclSuccess;
  for (DeferredCall& call : calls) {
    ZppCommunicator* zpp = call.state->zpp.get();
    ncclResult_t result = ncclInvalidUsage;
    if (zpp == nullptr) {
      ZPP_WARN("ncclGroupEnd: communicator %p was destroyed inside its group; its zpp call is lost",
               static_cast<void*>(call.state->comm));
    } else {
      log::ScopedRank rank(call.state->rank);
      result = call.all_gather ? zpp->AllGather(*call.all_gather, call.stream)
                               : zpp->ReduceScatter(*call.reduce_scatter, call.stream);
    }
    if (first_failure == ncclSuccess) first_failure = result;
  }
  return first_failure;
}

}  // namespace zpp::plugin
