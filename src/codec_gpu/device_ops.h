// The engine's device operations besides the codec, checked and logged as codec_gpu.h's are:
// the pre-multiplier, small host-to-device copies, hpZ's partition choice and reuse pattern
// (kernels/engine_kernels.h), and loading every kernel at set-up (kernels/kernel_loading.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/engine_kernels.h"
#include "kernels/math/hpz_select_math.h"
#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp::codec::gpu {

// data *= *scalar element-wise in fp32 (the scalar has data.dtype and is read when it runs).
Result ScaleByDeviceScalar(TensorView data, const void* scalar, cudaStream_t stream);

// At most kSmallCopyBytes (kernels/engine_kernels.h); `src` may be reused at once.
Result CopySmallFromHost(void* dst, const void* src, size_t bytes, cudaStream_t stream);

// As codec::SelectPartition (codec/hpz_select.h): `counters` in host-visible memory.
Result SelectPartition(const uint64_t* now, const HpzCandidates& candidates, uint32_t hit,
                       std::span<std::byte> send, uint32_t* counters, cudaStream_t stream);

// As codec::ReusePattern (codec/reuse_pattern.h), into device memory.
Result ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed, int32_t* pattern,
                    uint64_t* hash, cudaStream_t stream);

// Every zpp kernel loaded into the current device's context now, at communicator set-up: under
// CUDA's lazy loading a first launch mid-training can wait on NCCL kernels that wait on this
// rank (kernels/kernel_loading.h). ncclUnhandledCudaError and one WARN naming the file.
Result LoadKernels();

}  // namespace zpp::codec::gpu
