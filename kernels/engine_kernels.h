// The small device operations the engine needs besides the codec (src/backend/backend.h): the
// pre-multiplier read from device memory and small host-to-device copies (hpZ's choice of a
// partition is kernels/hpz_select_kernel.h). Host-callable launchers; nothing allocates,
// synchronizes or calls back, so they capture.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp::codec::gpu {

// data *= *scalar element-wise in fp32 (the scalar has data.dtype and is read when it runs).
Result ScaleByDeviceScalar(TensorView data, const void* scalar, cudaStream_t stream);

// Host bytes to device memory, stream-ordered, for small records (at most kSmallCopyBytes): the
// bytes travel as a kernel argument, so `src` may be reused at once, the host never waits (a
// cudaMemcpyAsync from pageable memory may) and the copy captures.
inline constexpr size_t kSmallCopyBytes = 1024;
Result CopySmallFromHost(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace zpp::codec::gpu
