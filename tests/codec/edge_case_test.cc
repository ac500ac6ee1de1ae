// The edge cases on the CPU codec: count 0 and 1, a tail block, tensors at unaligned
// element offsets, all-zero blocks, denormals, values already on the grid, ties.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "codec_runs.h"
#include "zpp/format.h"

namespace zpp::codec::testing {
namespace {

constexpr ncclDataType_t kDtypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16};

TEST(EdgeCaseTest, CountZeroTouchesNothing) {
  for (const int bits : {8, 4, 3, 2}) {
    const Format format{bits, 256, true};
    EXPECT_EQ(PieceBytes(0, ncclFloat32, format), 0u);
    EXPECT_EQ(Quantize({nullptr, ncclBfloat16, 0}, format, {}, {}), ncclSuccess);
    const PlacedPiece empty{{}, 0};
    EXPECT_EQ(Dequantize({&empty, 1}, 0, format, {nullptr, ncclFloat16, 0}), ncclSuccess);
    const std::span<const std::byte> none;
    EXPECT_EQ(DequantizeReduce({&none, 1}, 0, format, 1.0f, {nullptr, ncclFloat32, 0}),
              ncclSuccess);
    EXPECT_EQ(DequantizeReduceRequantize({&none, 1}, 0, format, 1.0f, format, {}, {}), ncclSuccess);
  }
}

TEST(EdgeCaseTest, CountOneRoundTrips) {
  for (const ncclDataType_t dtype : kDtypes) {
    for (const int bits : {8, 4, 3, 2}) {
      for (const double value : {1.0, -3.25, 1e-3, 1000.0}) {
        const HostTensor input = TensorOf(dtype, std::vector<double>{value});
        const RoundTrip trip = QuantizeAndBack(input, {bits, 32, true}, {}, dtype);
        ASSERT_EQ(trip.piece.size(), 32u);
        // amax = |x|, q = +-qmax, so dq = qmax * (|x| / qmax): x up to fp32 rounding.
        EXPECT_NEAR(trip.output[0], input.Get(0), std::fabs(input.Get(0)) * 1e-6)
            << DtypeName(dtype) << " int" << bits;
      }
    }
  }
}

TEST(EdgeCaseTest, TailBlockHasItsOwnScaleAndZeroPadding) {
  const Format format{4, 256, false};
  const size_t count = 3 * 256 + 17;  // odd: the last byte holds one element
  std::vector<double> values = Gaussian(count, 5);
  for (size_t i = 3 * 256; i < count; ++i) values[i] *= 1000;  // the tail's own magnitude
  const HostTensor input = TensorOf(ncclFloat32, values);
  const RoundTrip trip = QuantizeAndBack(input, format, {}, ncclFloat32);
  double tail_amax = 0;
  for (size_t i = 3 * 256; i < count; ++i) tail_amax = std::max(tail_amax, std::fabs(values[i]));
  EXPECT_FLOAT_EQ(RefScale(trip.piece.ConstSpan(), 3), static_cast<float>(tail_amax / 7));
  EXPECT_LT(RefScale(trip.piece.ConstSpan(), 2), 1.0f);
  const size_t payload = zppPieceScaleBytes(count, 256);
  const auto last = static_cast<uint8_t>(trip.piece.data()[payload + count / 2]);
  EXPECT_EQ(last >> 4, 0) << "the high nibble past the end is zero";
  for (size_t i = payload + count / 2 + 1; i < trip.piece.size(); ++i) {
    EXPECT_EQ(trip.piece.data()[i], std::byte{0});
  }
  for (size_t i = 0; i < count; ++i) {
    const double step = (i < 3 * 256 ? RefScale(trip.piece.ConstSpan(), i / 256) : tail_amax / 7);
    ASSERT_LE(std::fabs(trip.output[i] - input.Get(i)), step * 0.5001) << i;
  }
}

// A tensor starting 1, 3 or 5 elements into an aligned buffer encodes to the same bytes as an
// aligned copy, and decodes to any element offset with the same values.
TEST(EdgeCaseTest, UnalignedOffsetsGiveTheSameBytes) {
  for (const ncclDataType_t dtype : kDtypes) {
    const std::vector<double> values = Gaussian(1000, 6);
    const Format format{8, 64, true};
    const HostTensor aligned = TensorOf(dtype, values);
    const RoundTrip reference = QuantizeAndBack(aligned, format, {}, dtype);
    for (const size_t offset : {1, 3, 5}) {
      const HostTensor shifted = TensorOf(dtype, values, offset);
      ASSERT_NE(reinterpret_cast<uintptr_t>(shifted.data()) % 16, 0u);
      PieceBuffer piece(reference.piece.size());
      ASSERT_EQ(Quantize(shifted.View(), format, {}, piece.Span()), ncclSuccess);
      ASSERT_EQ(std::memcmp(piece.data(), reference.piece.ConstSpan().data(), piece.size()), 0)
          << DtypeName(dtype) << " offset " << offset;
      HostTensor output(dtype, values.size() + offset);
      output.Poison();
      const PlacedPiece placed{piece.ConstSpan(), offset};
      ASSERT_EQ(Dequantize({&placed, 1}, values.size(), format, output.MutableView()), ncclSuccess);
      for (size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(output.Get(offset + i), reference.output[i]) << i;
      }
    }
  }
}

TEST(EdgeCaseTest, AllZeroBlockHasScaleZeroAndDecodesToZero) {
  for (const ncclDataType_t dtype : kDtypes) {
    for (const int bits : {8, 4, 3, 2}) {
      std::vector<double> values = Gaussian(3 * 32, 7);
      for (size_t i = 32; i < 64; ++i) values[i] = (i % 2 == 0) ? 0.0 : -0.0;
      const HostTensor input = TensorOf(dtype, values);
      const RoundTrip trip = QuantizeAndBack(input, {bits, 32, false}, {}, dtype);
      EXPECT_EQ(RefScale(trip.piece.ConstSpan(), 1), 0.0f);
      EXPECT_FALSE(std::signbit(RefScale(trip.piece.ConstSpan(), 1)));
      for (size_t i = 32; i < 64; ++i) {
        EXPECT_EQ(RefQuantized(trip.piece.ConstSpan(), 96, {bits, 32, false}, i), 0);
        EXPECT_EQ(trip.output[i], 0.0);
        EXPECT_FALSE(std::signbit(trip.output[i]));
      }
      EXPECT_GT(RefScale(trip.piece.ConstSpan(), 0), 0.0f);
      EXPECT_GT(RefScale(trip.piece.ConstSpan(), 2), 0.0f);
    }
  }
}

TEST(EdgeCaseTest, DenormalsKeepTheirMagnitude) {
  // fp32 denormals (around 1e-40) and fp16 / bf16 denormals, one block each.
  const struct {
    ncclDataType_t dtype;
    double magnitude;
  } cases[] = {{ncclFloat32, 1e-40}, {ncclFloat16, 3e-5}, {ncclBfloat16, 5e-39}};
  for (const auto& c : cases) {
    std::vector<double> values = Uniform(256, -c.magnitude, c.magnitude, 8);
    const HostTensor input = TensorOf(c.dtype, values);
    for (const int bits : {8, 4, 3, 2}) {
      const RoundTrip trip = QuantizeAndBack(input, {bits, 256, false}, {}, c.dtype);
      double amax = 0;
      for (size_t i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(input.Get(i)));
      ASSERT_GT(amax, 0.0);
      const double qmax = bits == 2 ? 1 : (bits == 3 ? 3 : (bits == 4 ? 7 : 127));
      bool any_nonzero = false;
      for (size_t i = 0; i < 256; ++i) {
        // Half a step, widened by the scale's own denormal rounding (up to 2^-150 per step
        // unit) and the output's denormal spacing.
        const double bound = amax / (2 * qmax) + qmax * std::ldexp(1.0, -150) +
                             HalfUlp(c.dtype, std::fabs(input.Get(i))) + std::ldexp(1.0, -149);
        ASSERT_LE(std::fabs(trip.output[i] - input.Get(i)), bound)
            << DtypeName(c.dtype) << " int" << bits << " element " << i;
        any_nonzero = any_nonzero || trip.output[i] != 0;
      }
      EXPECT_TRUE(any_nonzero) << "denormals were flushed";
    }
  }
}

// A block of the smallest fp32 denormals has amax / qmax below 2^-149: the scale floor 2^-149
// makes every value an exact multiple, so the block round-trips exactly (int8, int4 and int3,
// whose amax / 3 is 2^-149 itself; int2's qmax 1 puts amax on the grid, not 1 and 2 x 2^-149).
TEST(EdgeCaseTest, TinyDenormalBlockRoundTripsExactly) {
  HostTensor input(ncclFloat32, 32);
  for (size_t i = 0; i < 32; ++i) {
    input.SetBits(i, static_cast<uint32_t>(i % 4) | (i % 3 == 0 ? 0x80000000u : 0u));
  }
  for (const int bits : {8, 4, 3}) {
    const RoundTrip trip = QuantizeAndBack(input, {bits, 32, false}, {}, ncclFloat32);
    EXPECT_EQ(RefScale(trip.piece.ConstSpan(), 0), std::ldexp(1.0f, -149));
    for (size_t i = 0; i < 32; ++i) EXPECT_EQ(trip.output[i], input.Get(i)) << i;
  }
}

// Values k * s with |k| <= qmax and the block holding +-qmax * s come back exactly whenever
// k * s is representable in the dtype: the scale is s and every division is exact.
TEST(EdgeCaseTest, OnGridValuesRoundTripExactly) {
  for (const ncclDataType_t dtype : kDtypes) {
    for (const int bits : {8, 4, 3, 2}) {
      const int qmax = bits == 2 ? 1 : (bits == 3 ? 3 : (bits == 4 ? 7 : 127));
      // Step s = m * 2^e with a short mantissa m, so that k * s fits every dtype's mantissa.
      const double mantissa = dtype == ncclBfloat16 ? 1 : (bits == 4 ? 5 : 3);
      for (const int exponent : {-20, -7, 0, 5}) {
        const double step = std::ldexp(mantissa, exponent);
        std::vector<double> values(512);
        for (size_t i = 0; i < values.size(); ++i) {
          const int k = static_cast<int>(i * 7919 % (2 * qmax + 1)) - qmax;
          values[i] = (i % 256 == 3 ? qmax : k) * step;
        }
        const HostTensor input = TensorOf(dtype, values);
        for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(input.Get(i), values[i]);
        const RoundTrip trip = QuantizeAndBack(input, {bits, 256, false}, {}, dtype);
        for (size_t i = 0; i < values.size(); ++i) {
          ASSERT_EQ(trip.output[i], values[i]) << DtypeName(dtype) << " int" << bits << " " << i;
        }
      }
    }
  }
}

TEST(EdgeCaseTest, TiesRoundToEven) {
  // Scale 1 (amax 127): x.5 goes to the even neighbour.
  const std::vector<double> values = {127, 2.5, 3.5, -2.5, -3.5, 0.5, -0.5, 1.5};
  const HostTensor input = TensorOf(ncclFloat32, values);
  const RoundTrip trip = QuantizeAndBack(input, {8, 32, false}, {}, ncclFloat32);
  const std::vector<double> expected = {127, 2, 4, -2, -4, 0, 0, 2};
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(trip.output[i], expected[i]) << i;
}

}  // namespace
}  // namespace zpp::codec::testing
