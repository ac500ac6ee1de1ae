#include "kernels/kernel_loading.h"

#include <utility>

#include "log/log.h"

namespace zpp::codec::gpu {

Result LoadKernels() {
  constexpr std::pair<const char*, bool (*)()> kFiles[] = {
      {"quantize.cu", detail::LoadQuantizeKernels},
      {"dequantize.cu", detail::LoadDequantizeKernels},
      {"dequantize_reduce.cu", detail::LoadDequantizeReduceKernels},
      {"dequantize_reduce_requantize.cu", detail::LoadDequantizeReduceRequantizeKernels},
      {"engine_kernels.cu", detail::LoadEngineKernels},
      {"fingerprint.cu", detail::LoadFingerprintKernels},
      {"hpz_select.cu", detail::LoadHpzSelectKernels},
      {"reuse_pattern.cu", detail::LoadReusePatternKernels},
      {"copy_batch.cu", detail::LoadCopyBatchKernels},
      {"weight_delta.cu", detail::LoadWeightDeltaKernels},
  };
  for (const auto& [file, load] : kFiles) {
    if (load()) continue;
    ZPP_WARN(
        "zpp: could not load the kernels of %s: %s; zpp set-up fails and every rank passes this "
        "communicator's calls to NCCL (is this GPU among the sm numbers libzpp.so was built for, "
        "CMake's ZPP_CUDA_ARCHITECTURES?)",
        file, cudaGetErrorString(cudaGetLastError()));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

}  // namespace zpp::codec::gpu
