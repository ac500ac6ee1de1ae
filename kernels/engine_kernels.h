// The two small device operations the engine needs besides the codec (src/backend/backend.h):
// hpZ's check of a hit against its fingerprint, and the pre-multiplier read from device memory.
// Host-callable launchers; nothing allocates, synchronizes or calls back, so both capture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "codec/views.h"
#include "common/result.h"

namespace zpp::codec::gpu {

// When *now != *at_fill: adds one to *failures (host-visible memory) and, with `poison`, fills
// `output` with NaN, so that a stale weight is never delivered as valid.
Result VerifyFingerprint(const uint64_t* now, const uint64_t* at_fill, TensorView output,
                         bool poison, uint32_t* failures, cudaStream_t stream);

// data *= *scalar element-wise in fp32 (the scalar has data.dtype and is read when it runs).
Result ScaleByDeviceScalar(TensorView data, const void* scalar, cudaStream_t stream);

// Host bytes to device memory, stream-ordered, for small records (at most kSmallCopyBytes): the
// bytes travel as a kernel argument, so `src` may be reused at once, the host never waits (a
// cudaMemcpyAsync from pageable memory may) and the copy captures.
inline constexpr size_t kSmallCopyBytes = 1024;
Result CopySmallFromHost(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace zpp::codec::gpu
