// One thread per call scans back for the latest equal fingerprint: an epoch has hundreds to a
// few thousand all-gathers, so the quadratic scan is a few hundred microseconds at worst, once
// per epoch. The hash is a wrapping sum, so the per-call atomics may land in any order.
#include "kernels/engine_kernels.h"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/math/fingerprint_math.h"
#include "kernels/math/reuse_pattern_math.h"

namespace zpp::codec::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void ReusePatternKernel(const uint64_t* __restrict__ fingerprints, uint32_t calls,
                                   uint64_t seed, int32_t* __restrict__ pattern,
                                   unsigned long long* __restrict__ hash) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) atomicAdd(hash, static_cast<unsigned long long>(ReusePatternSeedTerm(seed, calls)));
  if (i >= calls) return;
  const uint64_t mine = fingerprints[i];
  int32_t source = -1;
  for (uint32_t j = FingerprintMayReuse(mine) ? i : 0; j-- > 0;) {
    if (fingerprints[j] == mine) {
      source = static_cast<int32_t>(j);
      break;
    }
  }
  pattern[i] = source;
  atomicAdd(hash, static_cast<unsigned long long>(ReusePatternTerm(i, source)));
}

}  // namespace

cudaError_t LaunchReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed,
                               int32_t* pattern, uint64_t* hash, cudaStream_t stream) {
  const cudaError_t zeroed = cudaMemsetAsync(hash, 0, sizeof(uint64_t), stream);
  if (zeroed != cudaSuccess) return zeroed;
  const unsigned grid = calls == 0 ? 1u : (calls + kThreads - 1) / kThreads;
  ReusePatternKernel<<<grid, kThreads, 0, stream>>>(fingerprints, calls, seed, pattern,
                                                    reinterpret_cast<unsigned long long*>(hash));
  return cudaGetLastError();
}

namespace detail {
bool LoadReusePatternKernels() { return LoadKernel(ReusePatternKernel); }
}  // namespace detail

}  // namespace zpp::codec::gpu
