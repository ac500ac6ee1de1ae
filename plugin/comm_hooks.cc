// The exported hooks on communicator creation, destruction and groups: forwarded to the real
// NCCL, with zpp's per-communicator state kept beside (docs/architecture.md, the runtime NCCL
// rules under "Contracts every change keeps").
#include <memory>
#include <mutex>
#include <vector>

#include "log/log.h"
#include "plugin/c_boundary.h"
#include "plugin/comm_registry.h"
#include "plugin/comm_setup.h"
#include "plugin/group_state.h"
#include "plugin/nonblocking.h"
#include "plugin/premul_registry.h"
#include "plugin/real_call.h"
#include "zpp/zpp.h"

namespace {

using zpp::plugin::AfterCreation;
using zpp::plugin::BlockingOf;
using zpp::plugin::Comms;

// Communicators zpp aborted (abort, revoke, shrink with NCCL_SHRINK_ABORT). Abort returns at
// once, on the watchdog's thread, while the device may be stuck: freeing zpp's state then
// (cudaFree waits for the device) could hang it. So the state waits here until every device use
// of its memory has run, asked without waiting, and is freed at a later creation or destroy of a
// communicator (an in-process restart, torchelastic's or torchft's, makes new ones): restarts do
// not leak a reservation each. A state whose question fails (the context is broken) is kept to
// the end of the process.
class AbortedStates {
 public:
  void Add(std::shared_ptr<zpp::ZppCommunicator> zpp) {
    std::lock_guard<std::mutex> lock(mutex_);
    waiting_.push_back(std::move(zpp));
  }
  // Frees the states whose device uses have all run (asked without waiting).
  void FreeIdle() {
    std::vector<std::shared_ptr<zpp::ZppCommunicator>> done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        bool ended = false;
        if ((*it)->DeviceUsesEnded(&ended) != ncclSuccess) {
          ZPP_WARN(
              "an aborted communicator's device work cannot be queried (a CUDA error; "
              "ZPP_DEBUG=INFO shows it): its zpp memory is kept to the end of the process");
          kept_.push_back(std::move(*it));
          it = waiting_.erase(it);
        } else if (ended) {
          done.push_back(std::move(*it));
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
    }
    // Outside the lock: a call still running on another thread keeps its state until it returns.
    if (!done.empty()) {
      ZPP_INFO(kInit, "freeing zpp's state of %zu aborted communicator(s): their device work ran",
               done.size());
    }
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<zpp::ZppCommunicator>> waiting_;
  std::vector<std::shared_ptr<zpp::ZppCommunicator>> kept_;
};

AbortedStates& Aborted() {
  static auto* states = new AbortedStates();  // never destroyed: hooks may run at exit
  return *states;
}

// Creation succeeded (or is in progress on a nonblocking communicator): track the new one.
ncclResult_t Created(const zpp::NcclFunctions& nccl, ncclResult_t result, ncclComm_t comm,
                     bool blocking, const char* how) {
  Aborted().FreeIdle();
  if ((result == ncclSuccess || result == ncclInProgress) && comm != nullptr) {
    AfterCreation(nccl, comm, blocking && result == ncclSuccess, how);
  }
  return result;
}

bool ParentBlocking(ncclComm_t parent) {
  const auto state = Comms().Find(parent);
  return state == nullptr || state->blocking;
}

// Destroy and finalize release zpp's state on `comm` (its sub-communicators and buffers) before
// NCCL frees the parent; a call still running on another thread holds it until it returns.
// Abort must return at once, on the watchdog's thread, while the device may be stuck: zpp
// aborts its sub-communicators and leaves its state to AbortedStates (never freed on the spot).
void Forget(ncclComm_t comm, bool abort, const char* why) {
  std::shared_ptr<zpp::ZppCommunicator> zpp = Comms().Retire(comm, why);
  zpp::plugin::PreMuls().RemoveComm(comm);
  if (abort) {
    if (zpp != nullptr) {
      zpp->Abort();
      Aborted().Add(std::move(zpp));
    }
  } else {
    Aborted().FreeIdle();
  }
}

// Every live non-blocking communicator, once nothing is in progress on it.
ncclResult_t WaitForNonblockingComms(const zpp::NcclFunctions& nccl) {
  ncclResult_t first_failure = ncclSuccess;
  for (const auto& state : Comms().Live()) {
    if (state->blocking) continue;
    const ncclResult_t ready = zpp::plugin::WaitUntilReady(nccl, state->comm);
    if (first_failure == ncclSuccess) first_failure = ready;
  }
  return first_failure;
}

}  // namespace

extern "C" {

ZPP_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommInitRank);
    const ncclResult_t result = nccl->CommInitRank(comm, nranks, commId, rank);
    return Created(*nccl, result, comm ? *comm : nullptr, BlockingOf(nullptr, true),
                   "ncclCommInitRank");
  });
}

ZPP_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                            int rank, ncclConfig_t* config) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommInitRankConfig);
    const ncclResult_t result = nccl->CommInitRankConfig(comm, nranks, commId, rank, config);
    return Created(*nccl, result, comm ? *comm : nullptr, BlockingOf(config, true),
                   "ncclCommInitRankConfig");
  });
}

ZPP_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                              ncclUniqueId* commIds, ncclConfig_t* config) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommInitRankScalable);
    const ncclResult_t result =
        nccl->CommInitRankScalable(newcomm, nranks, myrank, nId, commIds, config);
    return Created(*nccl, result, newcomm ? *newcomm : nullptr, BlockingOf(config, true),
                   "ncclCommInitRankScalable");
  });
}

ZPP_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommInitAll);
    const ncclResult_t result = nccl->CommInitAll(comms, ndev, devlist);
    if (result == ncclSuccess && comms != nullptr) {
      for (int i = 0; i < ndev; ++i) {
        zpp::plugin::RegisterPassThroughOnly(
            *nccl, comms[i],
            "ncclCommInitAll (one thread drives every rank): zpp cannot set up collectively, "
            "calls pass through");
      }
    }
    return result;
  });
}

ZPP_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                   ncclConfig_t* config) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommSplit);
    const ncclResult_t result = nccl->CommSplit(comm, color, key, newcomm, config);
    // NCCL_SPLIT_NOCOLOR ranks get no communicator (*newcomm == NULL).
    return Created(*nccl, result, newcomm ? *newcomm : nullptr,
                   BlockingOf(config, ParentBlocking(comm)), "ncclCommSplit");
  });
}

ZPP_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                    ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommShrink);
    if (shrinkFlags & NCCL_SHRINK_ABORT) {
      // The flag ends the parent's ongoing operations first: zpp's on its sub-communicators too,
      // before NCCL shrinks (the shrunk communicator gets its own set-up below).
      Forget(comm, /*abort=*/true, "shrunk with NCCL_SHRINK_ABORT: calls pass through");
    }
    const ncclResult_t result =
        nccl->CommShrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
    return Created(*nccl, result, newcomm ? *newcomm : nullptr,
                   BlockingOf(config, ParentBlocking(comm)), "ncclCommShrink");
  });
}

ZPP_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommFinalize);
    // The sub-communicators are finalized with the parent: nothing of zpp's outlives it.
    Forget(comm, /*abort=*/false, "destroyed");
    return nccl->CommFinalize(comm);
  });
}

ZPP_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommDestroy);
    Forget(comm, /*abort=*/false, "destroyed");
    return nccl->CommDestroy(comm);
  });
}

ZPP_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommAbort);
    Forget(comm, /*abort=*/true, "aborted: calls pass through");
    return nccl->CommAbort(comm);
  });
}

// Revoke stops the communicator's in-flight and future operations; zpp stops its own the same
// way an abort does (its sub-communicators aborted, so that a zpp call in flight or deferred in
// a group ends with their error instead of waiting forever; its state kept, never freed), and
// later calls go to NCCL, which answers for a revoked communicator. Abort or destroy after it
// find nothing of zpp's left to end.
ZPP_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommRevoke);
    Forget(comm, /*abort=*/true, "revoked: calls pass through");
    return nccl->CommRevoke(comm, revokeFlags);
  });
}

// PyTorch's watchdog polls this to find a failed communicator and abort it. A failure on one of
// zpp's sub-communicators is the parent's failure: reported here, or the watchdog would wait on
// a hang.
ZPP_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, CommGetAsyncError);
    const ncclResult_t result = nccl->CommGetAsyncError(comm, asyncError);
    if (result != ncclSuccess || *asyncError != ncclSuccess) return result;
    const auto state = Comms().Find(comm);
    const std::shared_ptr<zpp::ZppCommunicator> zpp = state ? state->Zpp() : nullptr;
    if (zpp == nullptr) return result;
    if (const ncclResult_t sub = zpp->AsyncError(); sub != ncclSuccess) {
      if (!state->sub_error_reported.exchange(true)) {
        ZPP_WARN(
            "ncclCommGetAsyncError: communicator %p: one of zpp's sub-communicators failed (%s): "
            "reported as the communicator's asynchronous error; abort the communicator as for any "
            "NCCL error (NCCL_DEBUG=WARN and ZPP_DEBUG=INFO show the cause)",
            static_cast<void*>(comm), zpp::ResultName(sub));
      }
      *asyncError = sub;
    }
    return result;
  });
}

ZPP_API ncclResult_t ncclGroupStart() {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, GroupStart);
    const ncclResult_t result = nccl->GroupStart();
    if (result == ncclSuccess) ++zpp::plugin::ThisThreadGroup().depth;
    return result;
  });
}

ZPP_API ncclResult_t ncclGroupEnd() {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, GroupEnd);
    zpp::plugin::GroupState& group = zpp::plugin::ThisThreadGroup();
    // NCCL closes the group level even when the end reports an error.
    if (group.depth > 0) --group.depth;
    if (group.depth > 0) return nccl->GroupEnd();
    std::vector<zpp::plugin::ZppCall> deferred = std::move(group.deferred);
    group.deferred.clear();
    ncclResult_t result = nccl->GroupEnd();
    if (deferred.empty()) return result;
    if (result == ncclInProgress) {
      // NCCL is still launching the group's work on its non-blocking members; zpp's plans go on
      // the same streams after it, so they wait until NCCL has enqueued it.
      result = WaitForNonblockingComms(*nccl);
    }
    if (result != ncclSuccess) {
      ZPP_WARN(
          "ncclGroupEnd failed (%s): the group's %zu zpp call(s) did not run; ncclGroupEnd returns "
          "that error (%s)",
          zpp::ResultName(result), deferred.size(),
          result == ncclInProgress
              ? "a non-blocking member was still busy after ZPP_TIMEOUT: raise it, or wait on "
                "ncclCommGetAsyncError before the group ends"
              : "NCCL_DEBUG=WARN shows NCCL's reason");
      return result;
    }
    return zpp::plugin::RunDeferred(std::move(deferred));
  });
}

// PyTorch's estimate path: ncclGroupStart ... ncclGroupSimulateEnd. A simulation runs nothing:
// zpp's calls deferred in the group go to NCCL's simulation unchanged (so that its estimate
// covers them), and the group closes as an end would, leaving nothing deferred for a later group.
ZPP_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, GroupSimulateEnd);
    zpp::plugin::GroupState& group = zpp::plugin::ThisThreadGroup();
    if (group.depth > 0) --group.depth;
    if (group.depth == 0) {
      std::vector<zpp::plugin::ZppCall> deferred = std::move(group.deferred);
      group.deferred.clear();
      for (const zpp::plugin::ZppCall& call : deferred) {
        if (const ncclResult_t forwarded = call.to_nccl(); forwarded != ncclSuccess) {
          ZPP_WARN(
              "ncclGroupSimulateEnd: NCCL refused a grouped call to simulate (%d); the estimate "
              "leaves that call out",
              static_cast<int>(forwarded));
        }
      }
    }
    return nccl->GroupSimulateEnd(simInfo);
  });
}

ZPP_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                              ncclDataType_t datatype,
                                              ncclScalarResidence_t residence, ncclComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, RedOpCreatePreMulSum);
    const ncclResult_t result = nccl->RedOpCreatePreMulSum(op, scalar, datatype, residence, comm);
    if (result != ncclSuccess || op == nullptr) return result;
    zpp::plugin::PreMulSum premul;
    premul.dtype = datatype;
    if (residence == ncclScalarDevice) {
      premul.device_scalar = scalar;
    } else if (const auto value = zpp::plugin::ReadHostScalar(scalar, datatype)) {
      premul.host_value = *value;
    } else {
      return result;  // a dtype zpp does not take: its reduce-scatters pass through
    }
    zpp::plugin::PreMuls().Add(comm, *op, premul);
    return result;
  });
}

ZPP_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_REAL_OR_RETURN(nccl, RedOpDestroy);
    zpp::plugin::PreMuls().Remove(comm, op);
    return nccl->RedOpDestroy(op, comm);
  });
}

}  // extern "C"
