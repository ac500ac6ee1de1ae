// The 32-point rotation on a warp: a run of 32 elements is the chunks of 4 consecutive lanes.
// Strides 1, 2, 4 run inside each lane's chunk (HadamardStages<8>, the reference's own code),
// strides 8 and 16 across lanes by shuffles, in that order, each butterfly computing
// lower = a + b and upper = a - b (a the lower index) exactly as kernels/hadamard.h does. Runs
// that are not complete (the piece's trailing run) keep their values. No shared memory is used,
// so there are no bank conflicts to avoid. Every lane of the warp must call these.
#pragma once

#include <cstdint>

#include "kernels/device/chunk.cuh"
#include "kernels/hadamard.h"

namespace zpp::codec::device {

__device__ __forceinline__ void HadamardAcrossLanes(float (&values)[kChunk]) {
  const unsigned lane = threadIdx.x % 32;
#pragma unroll
  for (unsigned lane_bit = 1; lane_bit < kLanesPerRun; lane_bit <<= 1) {
    const bool upper = (lane & lane_bit) != 0;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const float other = __shfl_xor_sync(kFullWarp, values[i], lane_bit);
      values[i] = ButterflyHalf(upper, values[i], other);
    }
  }
}

// True when the 32-element run holding element `first` lies entirely before `count`.
__device__ __forceinline__ bool RunIsComplete(uint64_t first, uint64_t count) {
  const uint64_t run_first = first / kRotationPoints * kRotationPoints;
  return run_first + kRotationPoints <= count;
}

__device__ __forceinline__ void RotateChunkForward(float (&values)[kChunk], uint64_t first,
                                                   uint64_t count) {
  float rotated[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) rotated[i] = values[i] * kRotationPreScale;
  HadamardStages<kChunk>(rotated);
  HadamardAcrossLanes(rotated);
  if (RunIsComplete(first, count)) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) values[i] = rotated[i];
  }
}

__device__ __forceinline__ void RotateChunkInverse(float (&values)[kChunk], uint64_t first,
                                                   uint64_t count) {
  float rotated[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) rotated[i] = values[i];
  HadamardStages<kChunk>(rotated);
  HadamardAcrossLanes(rotated);
  if (RunIsComplete(first, count)) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) values[i] = rotated[i];
  }
}

}  // namespace zpp::codec::device
