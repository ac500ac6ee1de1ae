#include "codec_gpu/device_ops.h"

#include <cstdint>

#include "codec/hpz_select.h"
#include "codec_gpu/codec_gpu.h"
#include "kernels/kernel_loading.h"

namespace zpp::codec::gpu {

Result ScaleByDeviceScalar(TensorView data, const void* scalar, cudaStream_t stream) {
  constexpr const char* kApi = "ScaleByDeviceScalar";
  ZPP_CHECK_ARG(scalar != nullptr, "%s: NULL scalar" ZPP_BUG_REPORT, kApi);
  ZPP_CHECK_ARG(
      data.dtype == ncclFloat32 || data.dtype == ncclFloat16 || data.dtype == ncclBfloat16,
      "%s: dtype %d" ZPP_BUG_REPORT, kApi, static_cast<int>(data.dtype));
  return CheckCuda(kApi, LaunchScaleByDeviceScalar(data, scalar, stream));
}

Result CopySmallFromHost(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  constexpr const char* kApi = "CopySmallFromHost";
  ZPP_CHECK_ARG(bytes <= kSmallCopyBytes, "%s: %zu bytes (at most %zu)" ZPP_BUG_REPORT, kApi, bytes,
                kSmallCopyBytes);
  return CheckCuda(kApi, LaunchCopySmallFromHost(dst, src, bytes, stream));
}

Result SelectPartition(const uint64_t* now, const HpzCandidates& candidates, uint32_t hit,
                       std::span<std::byte> send, uint32_t* counters, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::SelectPartition";
  ZPP_CHECK(CheckSelectPartition(kApi, now, candidates, send, counters));
  return CheckCuda(kApi, LaunchSelectPartition(now, candidates, hit, send, counters, stream));
}

Result ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed, int32_t* pattern,
                    uint64_t* hash, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::ReusePattern";
  ZPP_CHECK_ARG(hash != nullptr && reinterpret_cast<uintptr_t>(hash) % 8 == 0,
                "%s: hash is null or not 8-byte aligned" ZPP_BUG_REPORT, kApi);
  ZPP_CHECK_ARG(calls == 0 || (fingerprints != nullptr && pattern != nullptr),
                "%s: null fingerprints or pattern for %u calls" ZPP_BUG_REPORT, kApi, calls);
  return CheckCuda(kApi, LaunchReusePattern(fingerprints, calls, seed, pattern, hash, stream));
}

Result LoadKernels() {
  const char* file = LoadEveryKernel();
  if (file == nullptr) return ncclSuccess;
  ZPP_WARN(
      "zpp: could not load the kernels of %s: %s; zpp set-up fails and every rank passes this "
      "communicator's calls to NCCL (is this GPU among the sm numbers libzpp.so was built for, "
      "CMake's ZPP_CUDA_ARCHITECTURES?)",
      file, cudaGetErrorString(cudaGetLastError()));
  return ncclUnhandledCudaError;
}

}  // namespace zpp::codec::gpu
