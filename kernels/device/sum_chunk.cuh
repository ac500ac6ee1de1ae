// The fused reduction's core on the device: decode chunk j of every piece and sum in piece
// order, starting from piece 0's value, then scale: the reference's SumRun element by element.
#pragma once

#include <cstdint>

#include "kernels/device/chunk.cuh"
#include "kernels/device/piece_codec.cuh"

namespace zpp::codec::device {

inline constexpr int kMaxReducePieces = 128;

// Piece addresses as a kernel argument (1 KiB).
struct ReducePieces {
  const uint8_t* piece[kMaxReducePieces];
};

// sum = (piece_0 + ... + piece_k-1) * scale_after_sum at the chunk of element `first`; 0 for
// elements at or past the end (they then neither raise a block's amax nor get stored).
template <int kBits>
__device__ __forceinline__ void SumChunk(const ReducePieces& pieces, int k,
                                         const PieceGeometry& geometry, uint64_t first,
                                         float scale_after_sum, float (&sum)[kChunk]) {
#pragma unroll
  for (int i = 0; i < kChunk; ++i) sum[i] = 0.0f;
  if (first >= geometry.count) return;
  DecodeChunk<kBits>(pieces.piece[0], geometry, first, sum);
#pragma unroll 4
  for (int j = 1; j < k; ++j) {
    float term[kChunk];
    DecodeChunk<kBits>(pieces.piece[j], geometry, first, term);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) sum[i] = sum[i] + term[i];
  }
#pragma unroll
  for (int i = 0; i < kChunk; ++i) {
    sum[i] = first + i < geometry.count ? sum[i] * scale_after_sum : 0.0f;
  }
}

}  // namespace zpp::codec::device
