// The amax of one quantization block across the lanes that hold it: block / 8 lanes, a power of
// two from 4 to 512. Up to a warp it is a butterfly of shuffles inside aligned lane groups; past
// a warp each warp leaves its max in shared memory and the block's warps read theirs (every lane
// of a group reads the same words: a broadcast, no bank conflicts). Integer max: the order of
// the reduction cannot change the result, so it equals the reference's serial max.
#pragma once

#include <cstdint>

#include "kernels/device/chunk.cuh"

namespace zpp::codec::device {

// Most lanes one block can span (4096 / 8), and so the largest thread block the kernels use.
inline constexpr int kMaxLanesPerBlock = 512;
inline constexpr int kMaxWarpsPerCta = kMaxLanesPerBlock / 32;

// Every thread of the thread block must call this (no early return before it), once per kernel;
// `lanes` is the same for all of them.
__device__ __forceinline__ uint32_t GroupMax(uint32_t value, int lanes,
                                             uint32_t (&warp_max)[kMaxWarpsPerCta]) {
  // Unrolled over every width a group can have, each step taken when the group is wider than
  // its offset (lanes is a power of two, the same on every thread): no loop counter, no
  // run-time trip count.
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    if (offset < lanes) {
      const uint32_t other = __shfl_xor_sync(kFullWarp, value, offset);
      value = other > value ? other : value;
    }
  }
  if (lanes <= 32) return value;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x % 32 == 0) warp_max[warp] = value;
  __syncthreads();
  const int warps = lanes / 32;
  const int first_warp = warp & ~(warps - 1);
  uint32_t result = 0;
#pragma unroll
  for (int w = 0; w < kMaxWarpsPerCta; ++w) {
    if (w < warps) {
      const uint32_t other = warp_max[first_warp + w];
      result = other > result ? other : result;
    }
  }
  return result;
}

}  // namespace zpp::codec::device
