#include "kernels/kernel_loading.h"

#include <utility>

namespace zpp::codec::gpu {

const char* LoadEveryKernel() {
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
    if (!load()) return file;
  }
  return nullptr;
}

}  // namespace zpp::codec::gpu
