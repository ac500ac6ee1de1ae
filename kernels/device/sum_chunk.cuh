// The fused reduction's core on the device: decode chunk j of every piece and sum in piece
// order, starting from piece 0's value, then scale: the reference's SumRun element by element.
#pragma once

#include <cstdint>

#include "kernels/device/chunk.cuh"
#include "kernels/device/piece_codec.cuh"
#include "kernels/math/codec_params.h"

namespace zpp::codec::device {

inline constexpr int kMaxReducePieces = 128;

// Piece addresses as a kernel argument (1 KiB): the single sum of the list-form launchers.
struct ReducePieces {
  const uint8_t* piece[kMaxReducePieces];
  __device__ __forceinline__ const uint8_t* Term(uint64_t /*item*/, int term) const {
    return piece[term];
  }
};

// The sums of a batch (codec::ReduceBatch), by formula: any number of sums and terms.
struct StridedPieces {
  const uint8_t* base;
  ReduceBatch batch;
  __device__ __forceinline__ const uint8_t* Term(uint64_t item, int term) const {
    return base + batch.Offset(item, static_cast<uint64_t>(term));
  }
};

// Terms decoded before any is added: k loads in flight per thread instead of one.
inline constexpr int kTermsInFlight = 4;

// sum = (piece_0 + ... + piece_k-1) * scale_after_sum at the chunk of element `first` of sum
// `item`; 0 for elements at or past the end (they then neither raise a block's amax nor get
// stored). The terms are decoded kTermsInFlight at a time and added in term order, starting
// from term 0's value: the reference's SumRun, element by element, bit for bit.
template <int kBits, typename Pieces>
__device__ __forceinline__ void SumChunk(const Pieces& pieces, uint64_t item, int k,
                                         const PieceGeometry& geometry, uint64_t first,
                                         float scale_after_sum, float (&sum)[kChunk]) {
#pragma unroll
  for (int i = 0; i < kChunk; ++i) sum[i] = 0.0f;
  if (first >= geometry.count) return;
  for (int j = 0; j < k; j += kTermsInFlight) {
    float term[kTermsInFlight][kChunk];
#pragma unroll
    for (int u = 0; u < kTermsInFlight; ++u) {
      if (j + u < k) DecodeChunk<kBits>(pieces.Term(item, j + u), geometry, first, term[u]);
    }
#pragma unroll
    for (int u = 0; u < kTermsInFlight; ++u) {
      if (j + u == 0) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) sum[i] = term[0][i];
      } else if (j + u < k) {
#pragma unroll
        for (int i = 0; i < kChunk; ++i) sum[i] = sum[i] + term[u][i];
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kChunk; ++i) {
    sum[i] = first + i < geometry.count ? sum[i] * scale_after_sum : 0.0f;
  }
}

}  // namespace zpp::codec::device
