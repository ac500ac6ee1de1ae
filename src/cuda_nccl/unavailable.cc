// The build without CUDA (the sanitizer builds): the plugin passes every call through.
#include "cuda_nccl/zpp_communicator.h"

namespace zpp {

Result SetUpZppCommunicatorWith(const engine::EngineOptions&, const NcclFunctions&, ncclComm_t,
                                StatsCounters&, std::unique_ptr<ZppCommunicator>*,
                                std::string* why_not) {
  *why_not = "this libzpp.so was built without CUDA (ZPP_ENABLE_CUDA=OFF)";
  return ncclInvalidUsage;
}

Result SetUpZppCommunicator(const NcclFunctions& nccl, ncclComm_t comm, StatsCounters& stats,
                            std::unique_ptr<ZppCommunicator>* out, std::string* why_not) {
  return SetUpZppCommunicatorWith({}, nccl, comm, stats, out, why_not);
}

bool StreamCapturing(cudaStream_t) { return false; }

}  // namespace zpp
