// The optional 32-point rotation (format.h): forward H32 * (x / 32), inverse H32 * y.
//
// H32 is applied as five butterfly stages with strides 1, 2, 4, 8, 16, in that order; each
// butterfly is one IEEE add and one IEEE subtract of the same two inputs, so any split of a stage
// across threads gives the same bits as long as every butterfly computes lower = a + b and
// upper = a - b with a the lower index. The kernels run strides 1, 2, 4 inside a thread (8
// consecutive elements) and strides 8, 16 across the 4 lanes that hold the 32 elements.
// Scaling by 1/32 before the stages is exact (a power of two) and keeps every partial sum within
// the input's range, so no finite input overflows.
#pragma once

#include <cstdint>

#include "kernels/math/hd.h"
#include "zpp/format.h"

namespace zpp::codec {

inline constexpr int kRotationPoints = ZPP_ROTATION_POINTS;
inline constexpr float kRotationPreScale = 0.03125f;  // 1/32

ZPP_HD void Butterfly(float& lower, float& upper) {
  const float a = lower;
  const float b = upper;
  lower = a + b;
  upper = a - b;
}

// The same butterfly computed by the holder of one of its two values, as the kernels' stages
// across lanes do: the lower index's holder gets a + b, the upper index's a - b (a the lower).
ZPP_HD float ButterflyHalf(bool upper, float own, float other) {
  return upper ? other - own : own + other;
}

// Stages with strides 1 .. kPoints/2 over kPoints values in registers (kPoints a power of two);
// inside a stage the butterflies are independent, so their order there does not matter.
template <int kPoints>
ZPP_HD void HadamardStages(float* values) {
  ZPP_UNROLL
  for (int stride = 1; stride < kPoints; stride <<= 1) {
    ZPP_UNROLL
    for (int base = 0; base < kPoints; base += 2 * stride) {
      ZPP_UNROLL
      for (int i = base; i < base + stride; ++i) Butterfly(values[i], values[i + stride]);
    }
  }
}

ZPP_HD void RotateForward32(float* values) {
  for (int i = 0; i < kRotationPoints; ++i) values[i] *= kRotationPreScale;
  HadamardStages<kRotationPoints>(values);
}

ZPP_HD void RotateInverse32(float* values) { HadamardStages<kRotationPoints>(values); }

// Where the rotated runs end among the `n` elements from a block boundary to the piece's end
// (blocks of `block`, a multiple of 32): at n when n is a multiple of 32, else where the tail
// block starts: a block holding an incomplete run stays unrotated whole (format.h). A rotated
// value is about 1/sqrt(32) of the values it mixes, so rotated and unrotated values sharing a
// block's scale would leave the rotated ones a few quantization steps.
ZPP_HD uint64_t RotatedEnd(uint64_t n, uint64_t block) {
  return n % kRotationPoints == 0 ? n : n / block * block;
}

}  // namespace zpp::codec
