// Host-side helpers the launchers share: grid shapes, alignment, the dispatch of runtime dtype
// and bit width to kernel template arguments.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <type_traits>

#include "kernels/device/chunk.cuh"
#include "kernels/device/group_max.cuh"
#include "kernels/device/piece_codec.cuh"
#include "kernels/math/codec_math.h"
#include "kernels/math/codec_params.h"
#include "zpp/format.h"

namespace zpp::codec::gpu::detail {

// A thread block of 256 threads, or of a whole quantization block's lanes when that is more
// (4096-element blocks: 512 lanes), so a block's amax never leaves its thread block.
inline int ThreadsFor(int block) {
  const int lanes = block / device::kChunk;
  return lanes > 256 ? lanes : 256;
}

inline unsigned GridFor(uint64_t count, int threads) {
  const uint64_t chunks = (count + device::kChunk - 1) / device::kChunk;
  return static_cast<unsigned>((chunks + threads - 1) / threads);
}

// Rows of a batch's 2-D grid: one per item, up to the 65535 a grid can have; the kernels loop
// over the items past that (item += gridDim.y).
inline unsigned RowsFor(uint64_t items) {
  return static_cast<unsigned>(items < 65535 ? items : 65535);
}

__host__ __device__ __forceinline__ bool Aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

inline device::PieceGeometry GeometryOf(uint64_t count, const Format& format) {
  int32_t shift = 0;
  while ((int32_t{1} << shift) < format.block) ++shift;  // a power of two (CheckFormat)
  return device::PieceGeometry{count,
                               zppPieceBlocks(count, format.block),
                               zppPieceScaleBytes(count, format.block),
                               zppPiecePayloadBytes(count, format.bits),
                               format.block,
                               shift};
}

inline device::RoundingStream StreamOf(const Rounding& rounding) {
  return device::RoundingStream{rounding.stochastic,
                                StreamKey(rounding.seed, rounding.rank, rounding.epoch),
                                rounding.first_block};
}

template <ncclDataType_t kDtype>
using DtypeTag = std::integral_constant<ncclDataType_t, kDtype>;
template <int kBits>
using BitsTag = std::integral_constant<int, kBits>;
template <bool kValue>
using BoolTag = std::integral_constant<bool, kValue>;

// Calls body(DtypeTag) for a validated codec dtype.
template <typename Body>
void WithDtype(ncclDataType_t dtype, Body&& body) {
  if (dtype == ncclFloat32) {
    body(DtypeTag<ncclFloat32>{});
  } else if (dtype == ncclFloat16) {
    body(DtypeTag<ncclFloat16>{});
  } else {
    body(DtypeTag<ncclBfloat16>{});
  }
}

template <typename Body>
void WithBits(int bits, Body&& body) {
  if (bits == 8) {
    body(BitsTag<8>{});
  } else if (bits == 4) {
    body(BitsTag<4>{});
  } else if (bits == 3) {
    body(BitsTag<3>{});
  } else {
    body(BitsTag<2>{});
  }
}

template <typename Body>
void WithBool(bool value, Body&& body) {
  if (value) {
    body(BoolTag<true>{});
  } else {
    body(BoolTag<false>{});
  }
}

// Calls body.template operator()<kDtype, kBits>() for a validated codec dtype and bit width: a
// launcher's lambda names its kernel's template arguments once.
template <typename Body>
void WithDtypeAndBits(ncclDataType_t dtype, int bits, Body&& body) {
  WithDtype(dtype, [&](auto d) {
    WithBits(bits,
             [&](auto b) { body.template operator()<decltype(d)::value, decltype(b)::value>(); });
  });
}

// Calls body.template operator()<kBits, kOutBits>() for two validated bit widths.
template <typename Body>
void WithBitsPair(int bits, int out_bits, Body&& body) {
  WithBits(bits, [&](auto b) {
    WithBits(out_bits,
             [&](auto o) { body.template operator()<decltype(b)::value, decltype(o)::value>(); });
  });
}

// WithDtypeAndBits for every codec dtype and bit width (kernel_loading.h).
template <typename Body>
void ForEveryDtypeAndBits(Body&& body) {
  for (ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    for (int bits : {2, 3, 4, 8}) WithDtypeAndBits(dtype, bits, body);
  }
}

// WithBitsPair for every pair of bit widths (kernel_loading.h).
template <typename Body>
void ForEveryBitsPair(Body&& body) {
  for (int bits : {2, 3, 4, 8}) {
    for (int out_bits : {2, 3, 4, 8}) WithBitsPair(bits, out_bits, body);
  }
}

}  // namespace zpp::codec::gpu::detail
