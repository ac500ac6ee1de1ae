// The small device operations the engine needs besides the codec (src/backend/backend.h): the
// pre-multiplier read from device memory, small host-to-device copies, hpZ's choice of a
// partition and its reuse pattern. Host-callable launchers of arguments the checked API
// (src/codec_gpu/device_ops.h) has accepted: no checks, no logging, the CUDA error returned.
// Nothing allocates, synchronizes or calls back, so every launch captures.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/math/hpz_select_math.h"
#include "kernels/math/views.h"

namespace zpp::codec::gpu {

// data *= *scalar element-wise in fp32 (a float dtype; the scalar has data.dtype and is read
// when the kernel runs).
cudaError_t LaunchScaleByDeviceScalar(TensorView data, const void* scalar, cudaStream_t stream);

// Host bytes to device memory, stream-ordered, for small records (at most kSmallCopyBytes): the
// bytes travel as a kernel argument, so `src` may be reused at once, the host never waits (a
// cudaMemcpyAsync from pageable memory may) and the copy captures.
inline constexpr size_t kSmallCopyBytes = 1024;
cudaError_t LaunchCopySmallFromHost(void* dst, const void* src, size_t bytes, cudaStream_t stream);

// As codec::SelectPartition (src/codec/hpz_select.h): `counters` in host-visible memory.
cudaError_t LaunchSelectPartition(const uint64_t* now, const HpzCandidates& candidates,
                                  uint32_t hit, std::span<std::byte> send, uint32_t* counters,
                                  cudaStream_t stream);

// pattern[i] = the latest j < i with fingerprints[j] == fingerprints[i], else -1; *hash as
// codec::ReusePattern computes it (kernels/math/reuse_pattern_math.h).
cudaError_t LaunchReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed,
                               int32_t* pattern, uint64_t* hash, cudaStream_t stream);

}  // namespace zpp::codec::gpu
