// format.h: a NaN or an infinity is marked per element (the width's most negative code) and
// decodes to NaN, the canonical NaN of the output dtype; it never turns into finite values and
// costs its finite neighbours nothing (its run of 32 under the rotation). Through the fused
// reduction too. This is what keeps a framework's uninitialised padding (DeepSpeed's
// torch.empty) out of the real gradients beside it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codec_runs.h"

namespace zpp::codec::testing {
namespace {

constexpr ncclDataType_t kDtypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16};

uint32_t CanonicalNaN(ncclDataType_t dtype) {
  return dtype == ncclFloat32 ? 0x7FC00000u : dtype == ncclFloat16 ? 0x7E00u : 0x7FC0u;
}

int NonFiniteCode(int bits) { return -(1 << (bits - 1)); }

// Half a step of a Gaussian block's grid, a whole step when stochastic (format.h).
double Tolerance(int bits, bool stochastic) {
  return (stochastic ? 2.0 : 1.0) * (bits == 8 ? 0.1 : (bits == 4 ? 1.0 : 2.5));
}

class NonFiniteTest : public ::testing::TestWithParam<double> {};

// Element 101 sits in block 1 and in the rotated run 96..127; element 259 in the tail block,
// which is never rotated (its run is short).
bool Spoiled(size_t i, bool rotate) {
  return i == 259 || (rotate ? (i >= 96 && i < 128) : i == 101);
}

TEST_P(NonFiniteTest, ElementDecodesToNaNAndItsNeighboursSurvive) {
  const double poison = GetParam();
  for (const ncclDataType_t dtype : kDtypes) {
    for (const int bits : {8, 4, 3, 2}) {
      for (const bool rotate : {false, true}) {
        for (const bool stochastic : {false, true}) {
          const Format format{bits, 64, rotate};
          std::vector<double> values = Gaussian(4 * 64 + 10, 9);
          values[101] = poison;
          values[259] = poison;
          const HostTensor input = TensorOf(dtype, values);
          Rounding rounding;
          rounding.stochastic = stochastic;
          for (const ncclDataType_t output_dtype : kDtypes) {
            SCOPED_TRACE(::testing::Message()
                         << "dtype " << dtype << " bits " << bits << " rotate " << rotate
                         << " stochastic " << stochastic << " out " << output_dtype);
            const RoundTrip trip = QuantizeAndBack(input, format, rounding, output_dtype);
            EXPECT_TRUE(std::isfinite(RefScale(trip.piece.ConstSpan(), 1)));
            EXPECT_TRUE(std::isfinite(RefScale(trip.piece.ConstSpan(), 4)));
            HostTensor output(output_dtype, values.size());
            const PlacedPiece placed{trip.piece.ConstSpan(), 0};
            ASSERT_EQ(Dequantize({&placed, 1}, values.size(), format, output.MutableView()),
                      ncclSuccess);
            for (size_t i = 0; i < values.size(); ++i) {
              if (Spoiled(i, rotate)) {
                ASSERT_EQ(output.Bits(i), CanonicalNaN(output_dtype)) << i;
              } else {
                ASSERT_TRUE(std::isfinite(output.Get(i))) << i;
                ASSERT_NEAR(output.Get(i), input.Get(i), Tolerance(bits, stochastic)) << i;
              }
            }
            EXPECT_EQ(RefQuantized(trip.piece.ConstSpan(), values.size(), format, 259),
                      NonFiniteCode(bits));
            if (!rotate) {
              EXPECT_EQ(RefQuantized(trip.piece.ConstSpan(), values.size(), format, 101),
                        NonFiniteCode(bits));
            }
          }
        }
      }
    }
  }
}

// The scale is what the finite elements alone would give: the piece equals that of the same
// values with the poisoned elements set to 0, except the poisoned elements' codes.
TEST_P(NonFiniteTest, FiniteNeighboursQuantizeAsWithoutThePoison) {
  const Format format{4, 64, false};
  std::vector<double> clean = Gaussian(128, 12);
  clean[5] = 0.0;
  std::vector<double> dirty = clean;
  dirty[5] = GetParam();
  const RoundTrip a = QuantizeAndBack(TensorOf(ncclFloat32, clean), format, {}, ncclFloat32);
  const RoundTrip b = QuantizeAndBack(TensorOf(ncclFloat32, dirty), format, {}, ncclFloat32);
  EXPECT_EQ(RefScale(a.piece.ConstSpan(), 0), RefScale(b.piece.ConstSpan(), 0));
  for (size_t i = 0; i < clean.size(); ++i) {
    if (i == 5) continue;
    ASSERT_EQ(a.output[i], b.output[i]) << i;
  }
  EXPECT_TRUE(std::isnan(b.output[5]));
}

TEST_P(NonFiniteTest, ReductionKeepsNaNToItsElement) {
  const double poison = GetParam();
  const Format format{8, 32, false};
  std::vector<double> clean = Gaussian(96, 10);
  std::vector<double> dirty = Gaussian(96, 11);
  dirty[40] = poison;  // block 1 of the second piece
  PieceBuffer a(PieceBytes(96, ncclFloat32, format));
  PieceBuffer b(PieceBytes(96, ncclFloat32, format));
  ASSERT_EQ(Quantize(TensorOf(ncclFloat32, clean).View(), format, {}, a.Span()), ncclSuccess);
  ASSERT_EQ(Quantize(TensorOf(ncclFloat32, dirty).View(), format, {}, b.Span()), ncclSuccess);
  const std::span<const std::byte> pieces[] = {a.ConstSpan(), b.ConstSpan()};

  HostTensor sum(ncclBfloat16, 96);
  ASSERT_EQ(DequantizeReduce(pieces, 96, format, 0.5f, sum.MutableView()), ncclSuccess);
  for (size_t i = 0; i < 96; ++i) {
    if (i == 40) {
      ASSERT_EQ(sum.Bits(i), CanonicalNaN(ncclBfloat16)) << i;
    } else {
      ASSERT_TRUE(std::isfinite(sum.Get(i))) << i;
    }
  }
  for (const bool rotate : {false, true}) {
    const Format out_format{4, 64, rotate};
    PieceBuffer requantized(PieceBytes(96, ncclFloat32, out_format));
    ASSERT_EQ(
        DequantizeReduceRequantize(pieces, 96, format, 1.0f, out_format, {}, requantized.Span()),
        ncclSuccess);
    EXPECT_TRUE(std::isfinite(RefScale(requantized.ConstSpan(), 0)));
    const std::vector<double> decoded = RefDecodePiece(requantized.ConstSpan(), 96, out_format);
    for (size_t i = 0; i < 96; ++i) {
      const bool spoiled = rotate ? (i >= 32 && i < 64) : i == 40;
      ASSERT_EQ(std::isnan(decoded[i]), spoiled) << i << " rotate " << rotate;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(NaNAndInfinities, NonFiniteTest,
                         ::testing::Values(std::numeric_limits<double>::quiet_NaN(),
                                           std::numeric_limits<double>::infinity(),
                                           -std::numeric_limits<double>::infinity()),
                         [](const auto& param_info) {
                           return std::isnan(param_info.param) ? std::string("NaN")
                                  : param_info.param > 0       ? std::string("PlusInf")
                                                               : std::string("MinusInf");
                         });

// A finite input so large that the sum overflows: the tensor gets Inf (an honest overflow),
// a requantized piece marks each overflowed element non-finite, never finite.
TEST(NonFiniteOverflowTest, SumOverflowIsInfOrNaNNeverFinite) {
  const Format format{8, 32, false};
  std::vector<double> values(32, 3e38);
  values[7] = 1.0;  // stays finite in the sum
  PieceBuffer piece(PieceBytes(32, ncclFloat32, format));
  ASSERT_EQ(Quantize(TensorOf(ncclFloat32, values).View(), format, {}, piece.Span()), ncclSuccess);
  const std::span<const std::byte> pieces[] = {piece.ConstSpan(), piece.ConstSpan()};
  HostTensor sum(ncclFloat32, 32);
  ASSERT_EQ(DequantizeReduce(pieces, 32, format, 1.0f, sum.MutableView()), ncclSuccess);
  for (size_t i = 0; i < 32; ++i) {
    if (i != 7) {
      EXPECT_EQ(sum.Get(i), std::numeric_limits<double>::infinity()) << i;
    }
  }
  PieceBuffer requantized(piece.size());
  ASSERT_EQ(DequantizeReduceRequantize(pieces, 32, format, 1.0f, format, {}, requantized.Span()),
            ncclSuccess);
  for (size_t i = 0; i < 32; ++i) {
    if (i != 7) {
      EXPECT_EQ(RefQuantized(requantized.ConstSpan(), 32, format, i), -128) << i;
    }
  }
  EXPECT_TRUE(std::isfinite(RefDecodePiece(requantized.ConstSpan(), 32, format)[7]));
}

}  // namespace
}  // namespace zpp::codec::testing
