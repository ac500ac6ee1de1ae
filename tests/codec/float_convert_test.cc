// The hand-written fp16 / bf16 conversions against the formula references: widening over every
// bit pattern, narrowing at every representable value, every midpoint between neighbours (the
// ties) and one fp32 step either side of each midpoint, plus random fp32 bit patterns.
#include "kernels/math/float_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "reference.h"

namespace zpp::codec {
namespace {

using testing::RefBf16ToDouble;
using testing::RefDoubleToBf16;
using testing::RefDoubleToHalf;
using testing::RefHalfToDouble;

float NextUp(float value) { return std::nextafter(value, INFINITY); }
float NextDown(float value) { return std::nextafter(value, -INFINITY); }

// Checks narrowing of `value` against the reference (NaN: the canonical NaN).
void ExpectNarrowing(float value) {
  if (std::isnan(value)) {
    EXPECT_EQ(FloatToHalf(value), kCanonicalHalfNaN);
    EXPECT_EQ(FloatToBf16(value), kCanonicalBf16NaN);
    return;
  }
  ASSERT_EQ(FloatToHalf(value), RefDoubleToHalf(value)) << "fp16 of " << value;
  ASSERT_EQ(FloatToBf16(value), RefDoubleToBf16(value)) << "bf16 of " << value;
}

TEST(FloatConvertTest, WideningIsExactForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto pattern = static_cast<uint16_t>(bits);
    const double half = RefHalfToDouble(pattern);
    const double bf16 = RefBf16ToDouble(pattern);
    if (std::isnan(half)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(pattern))) << std::hex << bits;
    } else {
      ASSERT_EQ(static_cast<double>(HalfToFloat(pattern)), half) << std::hex << bits;
      ASSERT_EQ(std::signbit(HalfToFloat(pattern)), std::signbit(half)) << std::hex << bits;
    }
    if (std::isnan(bf16)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(pattern))) << std::hex << bits;
    } else {
      ASSERT_EQ(static_cast<double>(Bf16ToFloat(pattern)), bf16) << std::hex << bits;
    }
  }
}

TEST(FloatConvertTest, NarrowingRoundsToNearestEvenAtEveryTie) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    for (const bool bf16 : {false, true}) {
      const auto pattern = static_cast<uint16_t>(bits);
      const double value = bf16 ? RefBf16ToDouble(pattern) : RefHalfToDouble(pattern);
      const double next = bf16 ? RefBf16ToDouble(static_cast<uint16_t>(bits + 1))
                               : RefHalfToDouble(static_cast<uint16_t>(bits + 1));
      if (!std::isfinite(value) || !std::isfinite(next) || (bits & 0x7FFF) == 0x7FFF) continue;
      const auto exact = static_cast<float>(value);
      ExpectNarrowing(exact);
      // The midpoint is exact in fp32 for both formats (at most 12 significant bits).
      const auto midpoint = static_cast<float>((value + next) / 2);
      ASSERT_EQ(static_cast<double>(midpoint), (value + next) / 2);
      ExpectNarrowing(midpoint);
      ExpectNarrowing(NextUp(midpoint));
      ExpectNarrowing(NextDown(midpoint));
    }
  }
}

TEST(FloatConvertTest, NarrowingMatchesOnRandomPatterns) {
  std::mt19937 generator(7);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t bits = generator();
    ExpectNarrowing(FloatFromBits(bits));
  }
}

TEST(FloatConvertTest, SpecialValues) {
  EXPECT_EQ(FloatToHalf(INFINITY), 0x7C00);
  EXPECT_EQ(FloatToHalf(-INFINITY), 0xFC00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);  // fp16 max
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);  // the tie above the max rounds to Inf
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(5.9604645e-8f), 0x0001);   // 2^-24, the smallest denormal
  EXPECT_EQ(FloatToHalf(2.98023224e-8f), 0x0000);  // 2^-25: a tie, to even (0)
  EXPECT_EQ(FloatToHalf(NextUp(2.98023224e-8f)), 0x0001);
  EXPECT_EQ(FloatToBf16(INFINITY), 0x7F80);
  EXPECT_EQ(FloatToBf16(FloatFromBits(0x7F7FFFFFu)), 0x7F80);  // fp32 max rounds to Inf
  EXPECT_EQ(FloatToBf16(FloatFromBits(0x00000001u)), 0x0000);  // fp32 denormals keep scale
  EXPECT_EQ(FloatToBf16(FloatFromBits(0x00008000u)), 0x0000);  // tie to even
  EXPECT_EQ(FloatToBf16(FloatFromBits(0x00018000u)), 0x0002);  // tie to even, upward
  // A NaN whose payload sits only in the bits bf16 drops must stay NaN (not become Inf).
  EXPECT_EQ(FloatToBf16(FloatFromBits(0x7F800001u)), kCanonicalBf16NaN);
  EXPECT_EQ(FloatToBf16(FloatFromBits(0xFFC00000u)), kCanonicalBf16NaN);
  EXPECT_EQ(FloatToHalf(FloatFromBits(0x7F800001u)), kCanonicalHalfNaN);
  EXPECT_EQ(FloatBits(CanonicalizeNaN(FloatFromBits(0xFFC00001u))), kCanonicalNaNBits);
  EXPECT_EQ(CanonicalizeNaN(-0.0f), -0.0f);
  EXPECT_TRUE(std::signbit(CanonicalizeNaN(-0.0f)));
}

}  // namespace
}  // namespace zpp::codec
