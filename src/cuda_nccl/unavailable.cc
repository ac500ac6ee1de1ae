// The build without CUDA (the sanitizer builds): the plugin passes every call through.
#include "cuda_nccl/zpp_communicator.h"

namespace zpp {

Result SetUpZppCommunicator(const NcclFunctions&, ncclComm_t, StatsCounters&,
                            std::unique_ptr<ZppCommunicator>*, std::string* why_not) {
  *why_not = "this libzpp.so was built without CUDA (ZPP_ENABLE_CUDA=OFF)";
  return ncclInvalidUsage;
}

bool StreamCapturing(cudaStream_t) { return false; }

}  // namespace zpp
