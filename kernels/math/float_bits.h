// Bit casts between fp32 and uint32 that both compilers accept in __host__ __device__ code
// (std::bit_cast is constexpr, which device code may not call without relaxed constexpr).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/math/hd.h"

namespace zpp::codec {

ZPP_HD uint32_t FloatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

ZPP_HD float FloatFromBits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// Arithmetic on NaN yields different NaN bit patterns on x86 (the operand's payload, or the
// negative "default NaN") and on NVIDIA GPUs (0x7FFFFFFF). Every float the codec writes passes
// through here, so a NaN always leaves as the one pattern format.h names.
inline constexpr uint32_t kCanonicalNaNBits = 0x7FC00000u;

ZPP_HD float CanonicalizeNaN(float value) {
  return value != value ? FloatFromBits(kCanonicalNaNBits) : value;
}

}  // namespace zpp::codec
