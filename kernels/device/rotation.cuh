// The 32-point rotation on a warp: a run of 32 elements is the chunks of 4 consecutive lanes.
// Strides 1, 2, 4 run inside each lane's chunk (HadamardStages<8>, the reference's own code),
// strides 8 and 16 across lanes by shuffles, in that order, each butterfly computing
// lower = a + b and upper = a - b (a the lower index) exactly as kernels/math/hadamard.h does. Runs
// past RotatedEnd (the tail block, when the piece ends inside a run) keep their values. No shared
// memory is used, so there are no bank conflicts to avoid. Every lane of the warp must call these.
#pragma once

#include <cstdint>

#include "kernels/device/chunk.cuh"
#include "kernels/device/piece_codec.cuh"
#include "kernels/math/hadamard.h"

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

// True when the 32-element run holding element `first` of the piece is rotated: it lies before
// RotatedEnd, as the reference's runs do.
__device__ __forceinline__ bool RunIsRotated(uint64_t first, const PieceGeometry& geometry) {
  const uint64_t run_first = first / kRotationPoints * kRotationPoints;
  return run_first + kRotationPoints <=
         RotatedEnd(geometry.count, static_cast<uint64_t>(geometry.block));
}

// The rotation computed on every lane (the shuffles need the whole warp) and kept where `keep`.
__device__ __forceinline__ void RotateChunkForwardWhere(float (&values)[kChunk], bool keep) {
  float rotated[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) rotated[i] = values[i] * kRotationPreScale;
  HadamardStages<kChunk>(rotated);
  HadamardAcrossLanes(rotated);
  if (keep) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) values[i] = rotated[i];
  }
}

__device__ __forceinline__ void RotateChunkInverseWhere(float (&values)[kChunk], bool keep) {
  float rotated[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) rotated[i] = values[i];
  HadamardStages<kChunk>(rotated);
  HadamardAcrossLanes(rotated);
  if (keep) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) values[i] = rotated[i];
  }
}

__device__ __forceinline__ void RotateChunkForward(float (&values)[kChunk], uint64_t first,
                                                   const PieceGeometry& geometry) {
  RotateChunkForwardWhere(values, RunIsRotated(first, geometry));
}

__device__ __forceinline__ void RotateChunkInverse(float (&values)[kChunk], uint64_t first,
                                                   const PieceGeometry& geometry) {
  RotateChunkInverseWhere(values, RunIsRotated(first, geometry));
}

// From the rotated domain of a piece in `from` (rotated or not) to that of `to`, run by run: the
// two differ where one format rotates a run the other does not (a tail block ending inside a run
// is unrotated, and the tail blocks of two block sizes differ). Whether there is anything to do
// is the same on every lane, so the shuffles run on whole warps or not at all.
__device__ __forceinline__ void ChangeRotatedDomain(float (&values)[kChunk], uint64_t first,
                                                    const PieceGeometry& from, bool from_rotate,
                                                    const PieceGeometry& to, bool to_rotate) {
  const auto end = [](const PieceGeometry& g, bool rotate) {
    return rotate ? RotatedEnd(g.count, static_cast<uint64_t>(g.block)) : 0;
  };
  if (end(from, from_rotate) == end(to, to_rotate)) return;
  const bool in_rotated = from_rotate && RunIsRotated(first, from);
  const bool out_rotated = to_rotate && RunIsRotated(first, to);
  if (from_rotate) RotateChunkInverseWhere(values, in_rotated && !out_rotated);
  if (to_rotate) RotateChunkForwardWhere(values, !in_rotated && out_rotated);
}

}  // namespace zpp::codec::device
