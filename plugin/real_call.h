// The forwarding step every hook shares: find the real NCCL function or fail clearly.
#pragma once

#include "log/log.h"
#include "nccl_runtime/nccl_functions.h"

namespace zpp::plugin {

// The real table with `member` present, or nullptr after one WARN naming the function.
#define ZPP_REAL_OR_RETURN(nccl, member)                                       \
  const ::zpp::NcclFunctions* nccl = ::zpp::RealNccl();                        \
  if (nccl == nullptr) return ncclSystemError; /* RealNccl() said why, once */ \
  if (nccl->member == nullptr) {                                               \
    ZPP_WARN("zpp: the loaded NCCL (%d, %s) has no nccl" #member               \
             "; the call returns ncclInvalidUsage (use a newer NCCL, or set"   \
             " ZPP_NCCL_LIBRARY to one that has it)",                          \
             nccl->version, nccl->where.c_str());                              \
    return ncclInvalidUsage;                                                   \
  }

}  // namespace zpp::plugin
