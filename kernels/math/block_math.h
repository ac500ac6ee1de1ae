// Per-block and per-element arithmetic of the codec: amax, scale, rounding, int2/3/4/8 packing.
//
// Bit-exactness between the CPU reference and the kernels rests on three rules kept here and in
// the build: (1) only IEEE-rounded single operations (+, -, *, / and int<->float conversions),
// never a fused multiply-add: nvcc contracts a*b+c into an FMA by default and g++ for x86-64 does
// not, so the kernels build with --fmad=false and the reference with -ffp-contract=off; (2)
// correctly rounded division (nvcc's default -prec-div=true; no fast-math on either side) and no
// denormal flushing (-ftz=false on the device; the host never sets FTZ/DAZ); (3) rounding done by
// explicit arithmetic, not by library calls whose speed or availability differs (rintf is a libm
// call on baseline x86-64). Reductions are integer max or wrapping sums, so their order is free.
#pragma once

#include <cstdint>

#include "kernels/math/float_bits.h"
#include "kernels/math/hd.h"
#include "zpp/format.h"

namespace zpp::codec {

ZPP_HD constexpr int QMax(int bits) {
  return bits == 2 ? ZPP_INT2_QMAX
                   : (bits == 3 ? ZPP_INT3_QMAX : (bits == 4 ? ZPP_INT4_QMAX : ZPP_INT8_QMAX));
}

// |x| as bits. For non-negative floats the unsigned order of the bits is the order of the values,
// and Inf and NaN sort above every finite value.
ZPP_HD uint32_t MagnitudeBits(float value) { return FloatBits(value) & 0x7FFFFFFFu; }

ZPP_HD bool IsFiniteValue(float value) { return MagnitudeBits(value) < 0x7F800000u; }

// What a value adds to its block's amax: a non-finite value adds nothing, so one NaN or Inf costs
// its own element only (format.h), never its block's finite neighbours.
ZPP_HD uint32_t FiniteMagnitudeBits(float value) {
  return IsFiniteValue(value) ? MagnitudeBits(value) : 0u;
}

// format.h: the integer that marks a non-finite element, the one code a symmetric grid of
// +-qmax leaves free in its width.
ZPP_HD int NonFiniteCode(int qmax) { return -qmax - 1; }

// format.h: 0 for an all-zero block (or one with no finite value), otherwise amax / qmax floored
// at the smallest denormal (a block of tiny denormals would otherwise get scale 0 and lose them).
// amax_bits is a max of FiniteMagnitudeBits, so always finite.
ZPP_HD float BlockScale(uint32_t amax_bits, int qmax) {
  if (amax_bits == 0) return 0.0f;
  const float scale = FloatFromBits(amax_bits) / static_cast<float>(qmax);
  const float smallest = FloatFromBits(1u);  // 2^-149
  return scale < smallest ? smallest : scale;
}

// Round half to even for |value| < 2^22: adding 1.5 * 2^23 leaves no fraction bits, so the FPU's
// round-to-nearest-even does the work; subtracting it back is exact.
ZPP_HD float RoundHalfEven(float value) {
  const float shifter = 12582912.0f;
  return (value + shifter) - shifter;
}

ZPP_HD int ClampToQMax(int q, int qmax) { return q > qmax ? qmax : (q < -qmax ? -qmax : q); }

// How a finite block's values map onto its integer grid: v = (x * pre_scale) * inverse, with
// inverse = 1 / (scale * pre_scale) computed once per block, so that each element costs two
// multiplies and no division (a correctly rounded division is a dozen instructions on the GPU,
// where the quantize kernels must keep up with memory) and no branch. pre_scale is 2^64 for
// scales below 2^-126, whose reciprocal could overflow, and 1 otherwise; both scalings by a
// power of two are exact. A zero scale (all-zero block) maps every finite value to 0.
struct GridMap {
  float pre_scale;
  float inverse;
};

ZPP_HD GridMap GridMapOf(float scale) {
  if (scale == 0.0f) return GridMap{0.0f, 0.0f};
  const float smallest_normal = 1.17549435e-38f;                                     // 2^-126
  const float pre_scale = scale < smallest_normal ? 18446744073709551616.0f : 1.0f;  // 2^64
  return GridMap{pre_scale, 1.0f / (scale * pre_scale)};
}

// x / scale to within two fp32 roundings (|q| <= 127: under 2^-16 of a step).
ZPP_HD float ToGrid(float value, GridMap grid) { return (value * grid.pre_scale) * grid.inverse; }

// q = round(x / scale), half to even. |x / scale| <= qmax (1 + 2^-22) by construction of the
// scale; the clamp is only a guard. A non-finite x gets the marker before any conversion to int
// (converting a NaN is undefined).
ZPP_HD int QuantizeNearest(float value, GridMap grid, int qmax) {
  if (!IsFiniteValue(value)) return NonFiniteCode(qmax);
  return ClampToQMax(static_cast<int>(RoundHalfEven(ToGrid(value, grid))), qmax);
}

// Stochastic rounding: v = x / scale rounds up with probability frac(v), decided by 24 random
// bits, so E[q] = v (to 2^-24) and |x - q * scale| < scale.
ZPP_HD int QuantizeStochastic(float value, GridMap grid, int qmax, uint32_t random_bits) {
  if (!IsFiniteValue(value)) return NonFiniteCode(qmax);
  const float scaled = ToGrid(value, grid);
  int lower = static_cast<int>(scaled);  // truncation; |scaled| is far below 2^31
  if (static_cast<float>(lower) > scaled) --lower;
  const float fraction = scaled - static_cast<float>(lower);
  const float uniform = static_cast<float>(random_bits >> 8) * 5.9604644775390625e-8f;  // 2^-24
  return ClampToQMax(lower + (uniform < fraction ? 1 : 0), qmax);
}

// The marker decodes to the canonical NaN (float_bits.h), whatever the block's scale.
ZPP_HD float DequantizeValue(int q, float scale, int qmax) {
  return q == NonFiniteCode(qmax) ? FloatFromBits(kCanonicalNaNBits)
                                  : static_cast<float>(q) * scale;
}

// int4: element 2i in the low nibble, 2i+1 in the high nibble, two's complement.
ZPP_HD uint32_t PackInt4Pair(int low, int high) {
  return (static_cast<uint32_t>(low) & 0xFu) | ((static_cast<uint32_t>(high) & 0xFu) << 4);
}

// int2: element 4i + j in bits 2j and 2j + 1 of byte i, two's complement.
ZPP_HD uint32_t PackInt2Quad(int e0, int e1, int e2, int e3) {
  return (static_cast<uint32_t>(e0) & 0x3u) | ((static_cast<uint32_t>(e1) & 0x3u) << 2) |
         ((static_cast<uint32_t>(e2) & 0x3u) << 4) | ((static_cast<uint32_t>(e3) & 0x3u) << 6);
}

// int3: element 8i + j in bits 3j..3j+2 of the 24-bit little-endian word at bytes 3i..3i+2; this
// packs one group of eight into the word's low 24 bits.
ZPP_HD uint32_t PackInt3Group(const int (&q)[8]) {
  uint32_t word = 0;
  for (int j = 0; j < 8; ++j) word |= (static_cast<uint32_t>(q[j]) & 0x7u) << (3 * j);
  return word;
}

ZPP_HD int SignExtendInt3(uint32_t triple) { return static_cast<int>((triple & 0x7u) ^ 4u) - 4; }

ZPP_HD int SignExtendInt2(uint32_t pair) { return static_cast<int>((pair & 0x3u) ^ 2u) - 2; }

ZPP_HD int SignExtendInt4(uint32_t nibble) { return static_cast<int>((nibble & 0xFu) ^ 8u) - 8; }

ZPP_HD int SignExtendInt8(uint32_t byte) { return static_cast<int>((byte & 0xFFu) ^ 0x80u) - 128; }

}  // namespace zpp::codec
