// The collectives zpp takes over. Each call either runs a zpp plan on the communicator's
// ZppCommunicator or goes to the real NCCL unchanged (contract 2), with the reason counted.
// Every input to that choice is identical on all ranks (contract 3): the call's count, dtype
// and op, the communicator's agreed shape and settings, and whether the call is captured (all
// ranks of an SPMD job capture the same calls). Inside a group, zpp's plan waits for the group's
// end (plugin/group_state.h).
#include <optional>

#include "epoch/training_pass.h"
#include "kernels/math/nccl_types.h"
#include "plugin/c_boundary.h"
#include "plugin/comm_registry.h"
#include "plugin/comm_setup.h"
#include "plugin/group_state.h"
#include "plugin/premul_registry.h"
#include "plugin/real_call.h"
#include "zpp/zpp.h"

namespace {

using zpp::plugin::CommState;

// zpp's communicator for this call, or the reason to pass through that the planner does not
// know about. A non-blocking communicator sets up at its first call outside a group that is not
// capturing: every rank makes that call at the same point.
std::shared_ptr<zpp::ZppCommunicator> ZppFor(CommState& state, bool args_valid, cudaStream_t stream,
                                             zppPassThroughReason_t* reason) {
  *reason = zppReasonUnavailable;
  if (!args_valid) {
    *reason = zppReasonInvalidArgs;
    return nullptr;
  }
  if (state.setup_pending) {
    *reason = zppReasonNonblocking;
    if (zpp::plugin::ThisThreadGroup().depth > 0 || zpp::StreamCapturing(stream)) return nullptr;
    zpp::plugin::SetUpPending(*zpp::RealNccl(), state);
  }
  std::shared_ptr<zpp::ZppCommunicator> zpp = state.Zpp();
  if (zpp == nullptr) {
    if (!state.blocking) {
      *reason = zppReasonNonblocking;
    } else if (state.nranks < 2) {
      *reason = zppReasonOneRank;
    }
  }
  return zpp;
}

bool ValidDtype(ncclDataType_t dtype) {
  return static_cast<int>(dtype) >= 0 && static_cast<int>(dtype) < ncclNumTypes;
}

// A communicator zpp does not know is NCCL's to judge: one made through an entry point zpp does
// not hook (ncclCommGrow in newer NCCL, a symbol added later) may sit at the address of one that
// was destroyed, aborted or revoked, since the allocator reuses addresses.
template <typename Forward>
ncclResult_t UnknownComm(ncclComm_t comm, const char* function, Forward&& forward) {
  if (zpp::plugin::Comms().WasRetired(comm)) {
    ZPP_INFO(kPlugin,
             "%s: communicator %p is not one zpp set up (its address was one that ended): passed "
             "through",
             function, static_cast<void*>(comm));
  }
  zpp::ProcessStats().AddPassThrough(zppReasonInvalidComm, 0);
  return forward();
}

// What every hook does once it knows the call's communicator: pass through with the reason
// counted, wait for the group's end, or run zpp's plan. The plan is made here, once.
template <typename Args, typename Forward>
ncclResult_t Intercept(const std::shared_ptr<CommState>& state, const Args& args, bool valid,
                       uint64_t input_bytes, cudaStream_t stream, Forward&& forward) {
  auto pass_through = [&](zppPassThroughReason_t reason) {
    state->stats.AddPassThrough(reason, input_bytes);
    return forward();
  };
  zppPassThroughReason_t reason = zppReasonUnavailable;
  std::shared_ptr<zpp::ZppCommunicator> zpp = ZppFor(*state, valid, stream, &reason);
  if (zpp == nullptr) return pass_through(reason);
  zpp::plugin::GroupState& group = zpp::plugin::ThisThreadGroup();
  // ZPP_TUNE=auto times the calls every rank makes outside groups and captures, before their
  // plan: a group's calls run at its end, and a capture's when the graph is launched.
  const bool timed = zpp->Tuned() && group.depth == 0 && !zpp::StreamCapturing(stream);
  if (timed) {
    if (const ncclResult_t advanced = zpp->AtCall(); advanced != ncclSuccess) return advanced;
  }
  const zpp::plan::Call planned = zpp::engine::CallOf(args);
  const zpp::plan::Plan plan = zpp->Decide(planned);
  // A planned call NCCL runs counts what NCCL's ring sends, as the engine counts the pass-throughs
  // it runs itself: the planner's prediction, both as sent and as plain's (zppStats_t).
  auto planned_pass_through = [&](zppPassThroughReason_t why) {
    state->stats.AddPlainOffNode(plan.plain_off_node_bytes);
    state->stats.AddSent(zppLinkInterNode, plan.plain_off_node_bytes);
    return pass_through(why);
  };
  if (plan.kind == zpp::plan::PlanKind::kPassThrough) {
    if (!timed || plan.reason != zppReasonTuned) return planned_pass_through(plan.reason);
    return zpp->Timed(planned, stream, [&](zpp::plan::Plan* ran) {
      *ran = plan;
      return planned_pass_through(plan.reason);
    });
  }
  // (A timed call is known not to be capturing.)
  if (!timed && zpp::StreamCapturing(stream)) return planned_pass_through(zppReasonCapture);
  zpp::plugin::ZppCall call{state, std::move(zpp), plan, args, stream, forward};
  if (group.depth > 0) {
    group.deferred.push_back(std::move(call));
    return ncclSuccess;
  }
  if (!timed) return zpp::plugin::RunZppCall(call);
  return call.zpp->Timed(planned, stream,
                         [&](zpp::plan::Plan* ran) { return zpp::plugin::RunZppCall(call, ran); });
}

template <typename Args>
zpp::plan::Reduction ReductionOf(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t dtype,
                                 Args* args) {
  if (op == ncclSum) return zpp::plan::Reduction::kSum;
  if (op == ncclAvg) return zpp::plan::Reduction::kAvg;
  if (static_cast<int>(op) < ncclNumOps) return zpp::plan::Reduction::kOther;
  const auto premul = zpp::plugin::PreMuls().Find(comm, op);
  if (!premul || premul->dtype != dtype) return zpp::plan::Reduction::kOther;
  args->premul = premul->host_value;
  args->premul_device = premul->device_scalar;
  return zpp::plan::Reduction::kPreMulSum;
}

// What every hook does once the real NCCL is found: a null communicator is NCCL's to refuse, one
// zpp does not know is NCCL's to judge, and a known one's call goes to `intercept(state)`.
template <typename Forward, typename OnKnown>
ncclResult_t ForKnownComm(ncclComm_t comm, const char* function, Forward&& forward,
                          OnKnown&& intercept) {
  if (comm == nullptr) return forward();  // NCCL answers ncclInvalidArgument
  const std::shared_ptr<CommState> state = zpp::plugin::Comms().Find(comm);
  if (state == nullptr) return UnknownComm(comm, function, forward);
  return intercept(state);
}

// The arguments every collective shares, and whether zpp may read them: a dtype NCCL knows and
// buffers where there is anything to move.
template <typename Args>
Args CallArgs(const void* send, void* recv, size_t count, ncclDataType_t dtype, bool* valid) {
  *valid = ValidDtype(dtype) && (count == 0 || (send != nullptr && recv != nullptr));
  Args args;
  args.send = send;
  args.recv = recv;
  args.count = count;
  args.dtype = dtype;
  return args;
}

// A reduction's call as NCCL takes it.
struct ReductionCall {
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  ncclComm_t comm;
  cudaStream_t stream;
};

// The reduce-scatter's and the all-reduce's hook once the real NCCL is found; `input_per_rank`:
// the input holds `count` elements for every rank (reduce-scatter) rather than once.
template <typename Args, typename Forward>
ncclResult_t HookReduction(const char* function, const ReductionCall& call, bool input_per_rank,
                           Forward&& forward) {
  return ForKnownComm(call.comm, function, forward, [&](const std::shared_ptr<CommState>& state) {
    bool valid = false;
    auto args = CallArgs<Args>(call.send, call.recv, call.count, call.dtype, &valid);
    args.reduction = ReductionOf(call.comm, call.op, call.dtype, &args);
    const uint64_t copies = input_per_rank ? static_cast<uint64_t>(state->nranks) : 1;
    const uint64_t input_bytes = valid ? call.count * zpp::NcclTypeBytes(call.dtype) * copies : 0;
    return Intercept(state, args, valid, input_bytes, call.stream, forward);
  });
}

}  // namespace

extern "C" {

ZPP_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, AllGather);
    auto forward = [=] {
      return nccl->AllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream);
    };
    return ForKnownComm(comm, __func__, forward, [&](const std::shared_ptr<CommState>& state) {
      bool valid = false;
      auto args =
          CallArgs<zpp::engine::AllGatherArgs>(sendbuff, recvbuff, sendcount, datatype, &valid);
      args.pass = zpp::CallerTrainingPass();  // now: a group defers the call, not its pass
      const uint64_t input_bytes = valid ? sendcount * zpp::NcclTypeBytes(datatype) : 0;
      return Intercept(state, args, valid, input_bytes, stream, forward);
    });
  });
}

ZPP_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t stream) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, ReduceScatter);
    auto forward = [=] {
      return nccl->ReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
    };
    return HookReduction<zpp::engine::ReduceScatterArgs>(
        __func__, {sendbuff, recvbuff, recvcount, datatype, op, comm, stream}, true, forward);
  });
}

// DDP's buckets and HSDP's replica all-reduce (ZPP_QAR); every other all-reduce (ops, dtypes,
// sizes the plan does not take) goes to NCCL unchanged, its reason counted.
ZPP_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                   cudaStream_t stream) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, AllReduce);
    auto forward = [=] {
      return nccl->AllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
    };
    return HookReduction<zpp::engine::AllReduceArgs>(
        __func__, {sendbuff, recvbuff, count, datatype, op, comm, stream}, false, forward);
  });
}

}  // extern "C"
