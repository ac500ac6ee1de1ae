#include "plugin/group_state.h"

#include "log/log.h"

namespace zpp::plugin {

GroupState& ThisThreadGroup() {
  thread_local GroupState group;
  return group;
}

ncclResult_t RunZppCall(const ZppCall& call, plan::Plan* ran) {
  ZppCommunicator* zpp = call.zpp.get();
  log::ScopedRank rank(call.state->rank);
  if (const auto* gather = std::get_if<engine::AllGatherArgs>(&call.args)) {
    return zpp->AllGather(call.plan, *gather, call.stream, ran);
  }
  if (const auto* reduce = std::get_if<engine::AllReduceArgs>(&call.args)) {
    return zpp->AllReduce(call.plan, *reduce, call.stream, ran);
  }
  return zpp->ReduceScatter(call.plan, std::get<engine::ReduceScatterArgs>(call.args), call.stream,
                            ran);
}

ncclResult_t RunDeferred(std::vector<ZppCall> calls) {
  ncclResult_t first_failure = ncclSuccess;
  for (const ZppCall& call : calls) {
    // A group's call runs at its end: the communicator may have been destroyed or aborted since.
    // (An immediate call took its communicator from the registry just before; no check there.)
    ncclResult_t result = ncclInvalidUsage;
    if (call.state->Zpp() == call.zpp) {
      result = RunZppCall(call);
    } else {
      ZPP_WARN(
          "ncclGroupEnd: communicator %p was destroyed or aborted inside its group; its zpp "
          "call is lost and ncclGroupEnd reports ncclInvalidUsage (destroy or abort a "
          "communicator only after its group ends)",
          static_cast<void*>(call.state->comm));
    }
    if (first_failure == ncclSuccess) first_failure = result;
  }
  return first_failure;
}

}  // namespace zpp::plugin
