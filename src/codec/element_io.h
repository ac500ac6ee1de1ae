// Runs of tensor elements to and from fp32 on the host, for any dtype of the codec. memcpy, not
// typed loads: a tensor may start at any byte (an element offset into a larger buffer).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/math/codec_math.h"
#include "kernels/math/nccl_types.h"

namespace zpp::codec {

// FloatToBf16 without its branch (a NaN's canonical pattern chosen by a mask), so that a loop of
// it vectorizes; VectorRunsTest holds it to FloatToBf16 bit for bit.
inline uint16_t Bf16Branchless(float value) {
  const uint32_t bits = FloatBits(value);
  const uint32_t nan = 0u - static_cast<uint32_t>((bits & 0x7FFFFFFFu) > 0x7F800000u);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((rounded & ~nan) | (kCanonicalBf16NaN & nan));
}

// out[i] = (or += with kAdd) widen(16-bit element i): a loop per dtype (the widening a template
// argument, not a test per element), so that bf16's vectorizes.
template <bool kAdd, typename Widen>
inline void WidenHalves(const std::byte* bytes, size_t n, float* out, Widen widen) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, sizeof bits);
    if constexpr (kAdd) {
      out[i] += widen(bits);
    } else {
      out[i] = widen(bits);
    }
  }
}

// values[i] = element first + i, widened exactly.
inline void LoadElements(const void* data, ncclDataType_t dtype, size_t first, size_t n,
                         float* values) {
  const auto* bytes = static_cast<const std::byte*>(data) + first * NcclTypeBytes(dtype);
  if (dtype == ncclFloat32) {
    std::memcpy(values, bytes, n * sizeof(float));
    return;
  }
  if (dtype == ncclBfloat16) {
    WidenHalves<false>(bytes, n, values, [](uint16_t b) { return Bf16ToFloat(b); });
  } else {
    WidenHalves<false>(bytes, n, values, [](uint16_t b) { return HalfToFloat(b); });
  }
}

// sum[i] += element i, widened exactly: the additions LoadElements and a += loop make, without
// the copy.
inline void AddElements(const void* data, ncclDataType_t dtype, size_t n, float* sum) {
  const auto* bytes = static_cast<const std::byte*>(data);
  if (dtype == ncclFloat32) {
    for (size_t i = 0; i < n; ++i) {
      float value;
      std::memcpy(&value, bytes + 4 * i, sizeof value);
      sum[i] += value;
    }
    return;
  }
  if (dtype == ncclBfloat16) {
    WidenHalves<true>(bytes, n, sum, [](uint16_t b) { return Bf16ToFloat(b); });
  } else {
    WidenHalves<true>(bytes, n, sum, [](uint16_t b) { return HalfToFloat(b); });
  }
}

// Element first + i = values[i], rounded to nearest even into the dtype, NaN canonical.
inline void StoreElements(void* data, ncclDataType_t dtype, size_t first, size_t n,
                          const float* values) {
  auto* bytes = static_cast<std::byte*>(data) + first * NcclTypeBytes(dtype);
  if (dtype == ncclFloat32) {  // its own loop, so that it vectorizes
    for (size_t i = 0; i < n; ++i) {
      const float value = CanonicalizeNaN(values[i]);
      std::memcpy(bytes + 4 * i, &value, sizeof value);
    }
    return;
  }
  if (dtype == ncclBfloat16) {
    for (size_t i = 0; i < n; ++i) {
      const uint16_t bits = Bf16Branchless(values[i]);
      std::memcpy(bytes + 2 * i, &bits, sizeof bits);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint16_t bits = FloatToHalf(values[i]);
    std::memcpy(bytes + 2 * i, &bits, sizeof bits);
  }
}

// out = (0 + terms[0] + terms[1] + ...) * scale per element, in fp32, in term order, stored as
// StoreElements stores: the fill, AddElements per term, scale and store of a whole-buffer sum,
// bit for bit, done a cache-sized tile at a time so that each term is read once and the sum never
// leaves the cache. `out` may be one of the terms.
inline void SumElements(const std::byte* const* terms, size_t term_count, ncclDataType_t dtype,
                        size_t count, float scale, void* out) {
  constexpr size_t kTile = 2048;
  float tile[kTile];
  const size_t element_bytes = NcclTypeBytes(dtype);
  for (size_t first = 0; first < count; first += kTile) {
    const size_t n = count - first < kTile ? count - first : kTile;
    for (size_t i = 0; i < n; ++i) tile[i] = 0.0f;
    for (size_t t = 0; t < term_count; ++t) {
      AddElements(terms[t] + first * element_bytes, dtype, n, tile);
    }
    if (scale != 1.0f) {  // x * 1 is x, and a NaN's payload is canonical once stored
      for (size_t i = 0; i < n; ++i) tile[i] *= scale;
    }
    StoreElements(out, dtype, first, n, tile);
  }
}

}  // namespace zpp::codec
