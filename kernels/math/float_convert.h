// fp16 and bf16 <-> fp32 by hand, on integer bits, round to nearest even.
//
// Written out rather than taken from cuda_fp16.h / cuda_bf16.h so that the CPU reference and the
// kernels share one definition (the host has no such conversions in C++20), and so that bf16 is
// its own type here: DeepSpeed's qwZ read bf16 bits as fp16 for years, and a separate function
// per format, each tested against its own exhaustive reference, is what rules that out.
// Widening is exact. Narrowing rounds to nearest even, overflows to +-Inf, keeps denormals, and
// maps every NaN to the format's canonical quiet NaN (sign and payload dropped, see float_bits.h).
#pragma once

#include <cstdint>

#include "kernels/math/float_bits.h"
#include "kernels/math/hd.h"

namespace zpp::codec {

inline constexpr uint16_t kCanonicalHalfNaN = 0x7E00u;
inline constexpr uint16_t kCanonicalBf16NaN = 0x7FC0u;

// bf16 is the top half of an fp32: widening is a shift.
ZPP_HD float Bf16ToFloat(uint16_t bits) { return FloatFromBits(static_cast<uint32_t>(bits) << 16); }

ZPP_HD uint16_t FloatToBf16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return kCanonicalBf16NaN;
  // Adding 0x7FFF plus the lowest kept bit rounds half to even; a carry out of the mantissa
  // bumps the exponent, which is the right answer up to and including overflow to Inf.
  const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

ZPP_HD float HalfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0x1Fu) return FloatFromBits(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or denormal: mantissa * 2^-24, exact in fp32 (an integer below 2^10 times a power
    // of two), so no rounding mode or flush setting can change it.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return FloatFromBits(sign | FloatBits(magnitude));
  }
  return FloatFromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

ZPP_HD uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return kCanonicalHalfNaN;
  if (magnitude >= 0x47800000u)
    return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65536 (and Inf): Inf
  if (magnitude >= 0x38800000u) {
    // Normal in fp16 (>= 2^-14): rebias the exponent (127 -> 15), then round the 13 dropped
    // bits half to even; a carry may reach Inf (65520 and up), which is correct.
    const uint32_t rebased = magnitude - 0x38000000u;
    const uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  if (magnitude < 0x33000000u) return sign;  // below 2^-25: rounds to zero (2^-25 ties to 0)
  // Denormal in fp16: the value in units of 2^-24 is mantissa24 >> shift, rounded half to even.
  // A carry into bit 10 gives the smallest normal, whose encoding is the next integer.
  const uint32_t exponent = magnitude >> 23;  // 102..112 here
  const uint32_t mantissa = (magnitude & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  uint32_t result = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (remainder > half || (remainder == half && (result & 1u) != 0)) ++result;
  return static_cast<uint16_t>(sign | result);
}

}  // namespace zpp::codec
