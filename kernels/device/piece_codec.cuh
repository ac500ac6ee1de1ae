// Encoding a chunk into a piece and decoding a chunk from one, on the device: the reference's
// EncodeRun / DecodeRun (src/codec/block_codec.cc) split across the lanes of a block, with the
// same per-element functions of kernels/math/block_math.h.
#pragma once

#include <cstdint>

#include "kernels/device/chunk.cuh"
#include "kernels/device/group_max.cuh"
#include "kernels/math/codec_math.h"
#include "kernels/math/codec_params.h"

namespace zpp::codec::device {

// Where a piece of `count` elements keeps its regions (include/zpp/format.h).
struct PieceGeometry {
  uint64_t count;
  uint64_t blocks;
  uint64_t scale_bytes;    // the payload's offset
  uint64_t payload_bytes;  // padding included
  int32_t block;
  int32_t block_shift;  // log2(block): blocks are powers of two, so index by shift and mask
};

// Stochastic rounding's stream, keyed once per call on the host (StreamKey).
struct RoundingStream {
  bool stochastic;
  uint64_t stream_key;
  uint64_t first_block;
};

// Encodes this lane's chunk (values 0 past the piece's end) at element `first`. Every thread of
// the thread block calls it (GroupMax); lanes past the end only help with the block's amax. The
// lane holding a block's first chunk writes its scale; the lane holding the last chunk zeroes
// the padding of both regions, so every byte of the piece is written exactly once.
template <int kBits>
__device__ __forceinline__ void EncodeChunk(const float (&values)[kChunk], uint64_t first,
                                            const PieceGeometry& geometry,
                                            const RoundingStream& rounding, uint8_t* piece,
                                            uint32_t (&warp_max)[kMaxWarpsPerCta]) {
  uint32_t amax_bits = 0;
#pragma unroll
  for (int i = 0; i < kChunk; ++i) {
    const uint32_t magnitude = FiniteMagnitudeBits(values[i]);
    amax_bits = magnitude > amax_bits ? magnitude : amax_bits;
  }
  amax_bits = GroupMax(amax_bits, geometry.block / kChunk, warp_max);
  if (first >= geometry.count) return;

  static_assert(kChunk == 8, "int3 packs one chunk into one group of eight (format.h)");
  constexpr int kQMax = QMax(kBits);
  const float scale = BlockScale(amax_bits, kQMax);
  const uint64_t block_index = first >> geometry.block_shift;
  const uint32_t in_block =
      static_cast<uint32_t>(first) & static_cast<uint32_t>(geometry.block - 1);
  int q[kChunk];
  const GridMap grid = GridMapOf(scale);
  if (rounding.stochastic) {
    const uint64_t key = BlockKey(rounding.stream_key, rounding.first_block + block_index);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      q[i] = QuantizeStochastic(values[i], grid, kQMax, ElementBits(key, in_block + i));
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) q[i] = QuantizeNearest(values[i], grid, kQMax);
  }

  uint8_t* payload = piece + geometry.scale_bytes;
  uint64_t chunk_end;  // payload bytes written by this lane end here
  if constexpr (kBits == 8) {
    uint32_t words[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      words[i / 4] |= (static_cast<uint32_t>(q[i]) & 0xFFu) << (8 * (i % 4));
    }
    *reinterpret_cast<uint2*>(payload + first) = make_uint2(words[0], words[1]);
    chunk_end = first + kChunk;
  } else if constexpr (kBits == 3) {
    // Three bytes at 3 * (first / 8): only byte-aligned, so three byte stores.
    const uint32_t word = PackInt3Group(q);
    uint8_t* group = payload + 3 * (first / kChunk);
    group[0] = static_cast<uint8_t>(word);
    group[1] = static_cast<uint8_t>(word >> 8);
    group[2] = static_cast<uint8_t>(word >> 16);
    chunk_end = 3 * (first / kChunk) + 3;
  } else if constexpr (kBits == 2) {
    const uint32_t half =
        PackInt2Quad(q[0], q[1], q[2], q[3]) | (PackInt2Quad(q[4], q[5], q[6], q[7]) << 8);
    *reinterpret_cast<uint16_t*>(payload + first / 4) = static_cast<uint16_t>(half);
    chunk_end = first / 4 + kChunk / 4;
  } else {
    uint32_t word = 0;
#pragma unroll
    for (int i = 0; i < kChunk; i += 2) word |= PackInt4Pair(q[i], q[i + 1]) << (4 * i);
    *reinterpret_cast<uint32_t*>(payload + first / 2) = word;
    chunk_end = first / 2 + kChunk / 2;
  }
  if (in_block == 0) reinterpret_cast<float*>(piece)[block_index] = scale;
  if (first + kChunk >= geometry.count) {  // the piece's last chunk
    for (uint64_t byte = chunk_end; byte < geometry.payload_bytes; ++byte) payload[byte] = 0;
    for (uint64_t byte = 4 * geometry.blocks; byte < geometry.scale_bytes; ++byte) piece[byte] = 0;
  }
}

// values = q * scale for the chunk at element `first` (< count), in the piece's domain.
template <int kBits>
__device__ __forceinline__ void DecodeChunk(const uint8_t* piece, const PieceGeometry& geometry,
                                            uint64_t first, float (&values)[kChunk]) {
  constexpr int kQMax = QMax(kBits);
  const float scale = reinterpret_cast<const float*>(piece)[first >> geometry.block_shift];
  const uint8_t* payload = piece + geometry.scale_bytes;
  if constexpr (kBits == 8) {
    const uint2 packed = *reinterpret_cast<const uint2*>(payload + first);
    const uint32_t words[2] = {packed.x, packed.y};
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      values[i] = DequantizeValue(SignExtendInt8(words[i / 4] >> (8 * (i % 4))), scale, kQMax);
    }
  } else if constexpr (kBits == 3) {
    const uint8_t* group = payload + 3 * (first / kChunk);
    const uint32_t word = static_cast<uint32_t>(group[0]) | (static_cast<uint32_t>(group[1]) << 8) |
                          (static_cast<uint32_t>(group[2]) << 16);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      values[i] = DequantizeValue(SignExtendInt3(word >> (3 * i)), scale, kQMax);
    }
  } else if constexpr (kBits == 2) {
    const uint32_t half = *reinterpret_cast<const uint16_t*>(payload + first / 4);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      values[i] = DequantizeValue(SignExtendInt2(half >> (2 * i)), scale, kQMax);
    }
  } else {
    const uint32_t word = *reinterpret_cast<const uint32_t*>(payload + first / 2);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      values[i] = DequantizeValue(SignExtendInt4(word >> (4 * i)), scale, kQMax);
    }
  }
}

}  // namespace zpp::codec::device
