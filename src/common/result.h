// Result codes: NCCL's ncclResult_t. The CHECK macros that log a "-> rc" trail are in log/check.h.
#pragma once

#include <nccl.h>

namespace zpp {

using Result = ncclResult_t;

// "ncclSuccess", "ncclInvalidArgument", ... (the library needs no libnccl for this).
const char* ResultName(Result result);

}  // namespace zpp
