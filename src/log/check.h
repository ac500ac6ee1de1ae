// The CHECK macros that return a failing result and leave a "-> rc" trail in the log, as NCCL's
// NCCLCHECK does. Above common/result.h because they log.
#pragma once

#include "common/result.h"
#include "log/log.h"

// Appended to the message of a check that only a bug in zpp can fail: the user can only report it.
#define ZPP_BUG_REPORT " (a zpp bug: please report it with ZPP_DEBUG=INFO output)"

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
