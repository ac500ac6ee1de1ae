// Loading a chunk of a tensor as fp32 and storing fp32 into a tensor, for each dtype. The
// aligned forms use 16-byte vectors and need the chunk's address 16-byte aligned (the launcher
// checks the tensor's base and offsets); the other forms load element by element, for tensors
// that start at any element offset. Elements at or past `count` load as 0 and are not stored.
#pragma once

#include <nccl.h>

#include <cstdint>

#include "kernels/device/chunk.cuh"
#include "kernels/math/float_convert.h"

namespace zpp::codec::device {

template <ncclDataType_t kDtype>
__device__ __forceinline__ float WidenElement(uint32_t bits) {
  if constexpr (kDtype == ncclFloat32) return FloatFromBits(bits);
  if constexpr (kDtype == ncclFloat16) return HalfToFloat(static_cast<uint16_t>(bits));
  return Bf16ToFloat(static_cast<uint16_t>(bits));
}

template <ncclDataType_t kDtype>
__device__ __forceinline__ uint32_t NarrowElement(float value) {
  if constexpr (kDtype == ncclFloat32) return FloatBits(CanonicalizeNaN(value));
  if constexpr (kDtype == ncclFloat16) return FloatToHalf(value);
  return FloatToBf16(value);
}

template <ncclDataType_t kDtype>
__device__ __forceinline__ uint32_t LoadElementBits(const void* data, uint64_t index) {
  if constexpr (kDtype == ncclFloat32) return static_cast<const uint32_t*>(data)[index];
  return static_cast<const uint16_t*>(data)[index];
}

template <ncclDataType_t kDtype>
__device__ __forceinline__ void StoreElementBits(void* data, uint64_t index, uint32_t bits) {
  if constexpr (kDtype == ncclFloat32) {
    static_cast<uint32_t*>(data)[index] = bits;
  } else {
    static_cast<uint16_t*>(data)[index] = static_cast<uint16_t>(bits);
  }
}

// The 8 element bits of a full chunk in 16-byte vectors (two for fp32, one for 16-bit types).
template <ncclDataType_t kDtype>
__device__ __forceinline__ void LoadChunkVector(const void* data, uint64_t first,
                                                uint32_t (&bits)[kChunk]) {
  if constexpr (kDtype == ncclFloat32) {
    const uint4* vectors =
        reinterpret_cast<const uint4*>(static_cast<const uint32_t*>(data) + first);
    const uint4 low = vectors[0];
    const uint4 high = vectors[1];
    bits[0] = low.x, bits[1] = low.y, bits[2] = low.z, bits[3] = low.w;
    bits[4] = high.x, bits[5] = high.y, bits[6] = high.z, bits[7] = high.w;
  } else {
    const uint4 vector =
        *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(data) + first);
    const uint32_t words[4] = {vector.x, vector.y, vector.z, vector.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      bits[2 * i] = words[i] & 0xFFFFu;  // little-endian: the lower address is the low half
      bits[2 * i + 1] = words[i] >> 16;
    }
  }
}

template <ncclDataType_t kDtype>
__device__ __forceinline__ void StoreChunkVector(void* data, uint64_t first,
                                                 const uint32_t (&bits)[kChunk]) {
  if constexpr (kDtype == ncclFloat32) {
    uint4* vectors = reinterpret_cast<uint4*>(static_cast<uint32_t*>(data) + first);
    vectors[0] = make_uint4(bits[0], bits[1], bits[2], bits[3]);
    vectors[1] = make_uint4(bits[4], bits[5], bits[6], bits[7]);
  } else {
    uint32_t words[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) words[i] = bits[2 * i] | (bits[2 * i + 1] << 16);
    *reinterpret_cast<uint4*>(static_cast<uint16_t*>(data) + first) =
        make_uint4(words[0], words[1], words[2], words[3]);
  }
}

// values[i] = element first + i widened to fp32, or 0 at or past count.
template <ncclDataType_t kDtype, bool kAligned>
__device__ __forceinline__ void LoadChunk(const void* data, uint64_t first, uint64_t count,
                                          float (&values)[kChunk]) {
  uint32_t bits[kChunk];
  if (kAligned && first + kChunk <= count) {
    LoadChunkVector<kDtype>(data, first, bits);
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      bits[i] = first + i < count ? LoadElementBits<kDtype>(data, first + i) : 0u;
    }
  }
#pragma unroll
  for (int i = 0; i < kChunk; ++i) values[i] = WidenElement<kDtype>(bits[i]);
}

// Stores values[i] as element base + first + i for first + i < count (base: where the piece
// starts in the output, first/count: within the piece).
template <ncclDataType_t kDtype, bool kAligned>
__device__ __forceinline__ void StoreChunk(void* data, uint64_t base, uint64_t first,
                                           uint64_t count, const float (&values)[kChunk]) {
  uint32_t bits[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) bits[i] = NarrowElement<kDtype>(values[i]);
  if (kAligned && first + kChunk <= count) {
    StoreChunkVector<kDtype>(data, base + first, bits);
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      if (first + i < count) StoreElementBits<kDtype>(data, base + first + i, bits[i]);
    }
  }
}

}  // namespace zpp::codec::device
