// Whether there is a GPU to run the kernels on. With no driver, cudaGetDeviceCount fails
// ("driver version is insufficient"): that, like every other failure, means "no device".
#include <cuda_runtime_api.h>

#include "kernels/codec_kernels.h"

namespace zpp::codec::gpu {

bool DeviceAvailable(std::string* reason) {
  int devices = 0;
  const cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // clear it, so it does not surface in a later launch check
    if (reason != nullptr)
      *reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error);
    return false;
  }
  if (devices == 0) {
    if (reason != nullptr) *reason = "cudaGetDeviceCount: no CUDA device";
    return false;
  }
  return true;
}

}  // namespace zpp::codec::gpu
