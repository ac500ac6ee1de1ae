// The unit of work of every codec kernel: one thread owns a chunk of 8 consecutive elements of a
// piece (chunk c holds elements 8c .. 8c+7). 8 fp32 are two 16-byte vectors, 8 fp16/bf16 one;
// 8 int8 are one 8-byte store, 8 int4 one 4-byte store, 8 int2 one 2-byte store. Blocks (>= 32
// elements) hold whole chunks, so a chunk never straddles two scales, and a 32-element rotation run
// is the chunks of 4 consecutive lanes of a warp.
#pragma once

#include <cstdint>

namespace zpp::codec::device {

inline constexpr int kChunk = 8;
inline constexpr int kLanesPerRun = 4;  // 32-element rotation run / kChunk
inline constexpr unsigned kFullWarp = 0xFFFFFFFFu;

// The chunk this thread owns in a 1-D grid, and its first element.
__device__ __forceinline__ uint64_t ChunkFirstElement() {
  const uint64_t chunk = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  return chunk * kChunk;
}

}  // namespace zpp::codec::device
