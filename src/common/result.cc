#include "common/result.h"

#include "common/enum_names.h"

namespace zpp {

const char* ResultName(Result result) {
  static constexpr NamedValue<Result> kNames[] = {
      {ncclSuccess, "ncclSuccess"},
      {ncclUnhandledCudaError, "ncclUnhandledCudaError"},
      {ncclSystemError, "ncclSystemError"},
      {ncclInternalError, "ncclInternalError"},
      {ncclInvalidArgument, "ncclInvalidArgument"},
      {ncclInvalidUsage, "ncclInvalidUsage"},
      {ncclRemoteError, "ncclRemoteError"},
      {ncclInProgress, "ncclInProgress"}};
  static_assert(NamesEachOnce(kNames, ncclNumResults));
  return NameIn(kNames, result, "unknown ncclResult_t").data();  // literals: end in '\0'
}

}  // namespace zpp
