// The real NCCL, resolved at run time: libzpp.so never links libnccl (docs/architecture.md, the
// runtime NCCL rules under "Contracts every change keeps").
// One table per process, filled once; a function the loaded NCCL lacks stays null, and its hook
// answers ncclInvalidUsage instead of forwarding.
#pragma once

#include <nccl.h>

#include <string>

#include "log/check.h"

namespace zpp {

struct NcclFunctions {
  // The hooks zpp exports, forwarded to these.
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&ncclCommInitAll) CommInitAll = nullptr;
  decltype(&ncclCommInitRankScalable) CommInitRankScalable = nullptr;
  decltype(&ncclCommSplit) CommSplit = nullptr;
  decltype(&ncclCommShrink) CommShrink = nullptr;
  decltype(&ncclCommFinalize) CommFinalize = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclCommRevoke) CommRevoke = nullptr;  // NCCL 2.28 and newer
  decltype(&ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
  decltype(&ncclGroupSimulateEnd) GroupSimulateEnd = nullptr;
  decltype(&ncclRedOpCreatePreMulSum) RedOpCreatePreMulSum = nullptr;
  decltype(&ncclRedOpDestroy) RedOpDestroy = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  // What zpp's own plans and set-up use (not exported by zpp).
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclCommCount) CommCount = nullptr;
  decltype(&ncclCommUserRank) CommUserRank = nullptr;
  decltype(&ncclCommCuDevice) CommCuDevice = nullptr;
  decltype(&ncclAlltoAll) AlltoAll = nullptr;  // NCCL 2.28 and newer
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;

  int version = 0;    // ncclGetVersion's code, 0 if unknown
  std::string where;  // the file the functions come from
};

// Resolves every function from `library` (dlopen'ed, RTLD_LOCAL) or, when empty, from the
// objects loaded after zpp (dlsym(RTLD_NEXT)), else from an NCCL the process loaded privately
// (RTLD_LOCAL, as pip PyTorch does; found by walking the loaded objects). Fails with
// ncclSystemError when the core functions (all-gather, reduce-scatter, comm queries, groups) are
// missing; `error` says what.
Result LoadNcclFunctions(const std::string& library, NcclFunctions* out, std::string* error);

// The process's table, loaded on the first hook call (the framework has loaded its NCCL by then)
// from ZPP_NCCL_LIBRARY, RTLD_NEXT or the loaded objects. Null, with one WARN the first time,
// when no real NCCL can be found.
const NcclFunctions* RealNccl();

}  // namespace zpp
