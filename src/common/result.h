// Result codes (NCCL's ncclResult_t) and the CHECK macros that leave a "-> rc" trail.
#pragma once

#include <nccl.h>

#include "log/log.h"

namespace zpp {

using Result = ncclResult_t;

// "ncclSuccess", "ncclInvalidArgument", ... (the library needs no libnccl for this).
const char* ResultName(Result result);

}  // namespace zpp

// Returns the failing result from the enclosing function, logging where it passed through,
// as NCCLCHECK does: one INFO line per frame, so a failure reads as a trail of "file:line -> rc".
#define ZPP_CHECK(call)                                                                           \
  do {                                                                                            \
    const ::ncclResult_t zpp_check_rc = (call);                                                   \
    if (zpp_check_rc != ncclSuccess && zpp_check_rc != ncclInProgress) {                          \
      ZPP_LOG(::zpp::log::Level::kInfo, ::zpp::log::kAll, "%s:%d -> %d (%s)", __FILE__, __LINE__, \
              static_cast<int>(zpp_check_rc), ::zpp::ResultName(zpp_check_rc));                   \
      return zpp_check_rc;                                                                        \
    }                                                                                             \
  } while (0)

// Fails with ncclInvalidArgument and one WARN when `cond` does not hold.
#define ZPP_CHECK_ARG(cond, fmt, ...)           \
  do {                                          \
    if (!(cond)) {                              \
      ZPP_WARN(fmt __VA_OPT__(, ) __VA_ARGS__); \
      return ncclInvalidArgument;               \
    }                                           \
  } while (0)
