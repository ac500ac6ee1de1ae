// format.h: a block holding a NaN or an infinity decodes to NaN, every element of it, in the
// canonical NaN of the output dtype; no non-finite input turns into finite values, and the
// other blocks are untouched. Through the fused reduction too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "codec_runs.h"
#include "zpp/format.h"

namespace zpp::codec::testing {
namespace {

constexpr ncclDataType_t kDtypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16};

uint32_t CanonicalNaN(ncclDataType_t dtype) {
  return dtype == ncclFloat32 ? 0x7FC00000u : dtype == ncclFloat16 ? 0x7E00u : 0x7FC0u;
}

uint32_t ScaleBits(const PieceBuffer& piece, size_t block) {
  uint32_t bits;
  std::memcpy(&bits, piece.ConstSpan().data() + 4 * block, 4);
  return bits;
}

class NonFiniteTest : public ::testing::TestWithParam<double> {};

TEST_P(NonFiniteTest, BlockDecodesToNaNAndNeighboursSurvive) {
  const double poison = GetParam();
  for (const ncclDataType_t dtype : kDtypes) {
    for (const int bits : {8, 4, 3, 2}) {
      for (const bool rotate : {false, true}) {
        const Format format{bits, 64, rotate};
        std::vector<double> values = Gaussian(4 * 64 + 10, 9);
        values[64 + 37] = poison;     // block 1
        values[4 * 64 + 3] = poison;  // the tail block, in its unrotated short run
        const HostTensor input = TensorOf(dtype, values);
        for (const ncclDataType_t output_dtype : kDtypes) {
          const RoundTrip trip = QuantizeAndBack(input, format, {}, output_dtype);
          EXPECT_EQ(ScaleBits(trip.piece, 1), ZPP_NONFINITE_SCALE_BITS);
          EXPECT_EQ(ScaleBits(trip.piece, 4), ZPP_NONFINITE_SCALE_BITS);
          HostTensor output(output_dtype, values.size());
          const PlacedPiece placed{trip.piece.ConstSpan(), 0};
          ASSERT_EQ(Dequantize({&placed, 1}, values.size(), format, output.MutableView()),
                    ncclSuccess);
          for (size_t i = 0; i < values.size(); ++i) {
            const bool poisoned_block = (i >= 64 && i < 128) || i >= 256;
            if (poisoned_block) {
              ASSERT_EQ(RefQuantized(trip.piece.ConstSpan(), values.size(), format, i), 0);
              ASSERT_EQ(output.Bits(i), CanonicalNaN(output_dtype)) << i;
            } else {
              ASSERT_TRUE(std::isfinite(output.Get(i))) << i;
              ASSERT_NEAR(output.Get(i), input.Get(i), bits == 8 ? 0.1 : (bits == 4 ? 1.0 : 2.5))
                  << i;
            }
          }
        }
      }
    }
  }
}

TEST_P(NonFiniteTest, ReductionPropagatesNaNBlocks) {
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
    if (i >= 32 && i < 64) {
      ASSERT_EQ(sum.Bits(i), CanonicalNaN(ncclBfloat16)) << i;
    } else {
      ASSERT_TRUE(std::isfinite(sum.Get(i))) << i;
    }
  }
  PieceBuffer requantized(PieceBytes(96, ncclFloat32, {4, 64, true}));
  ASSERT_EQ(
      DequantizeReduceRequantize(pieces, 96, format, 1.0f, {4, 64, true}, {}, requantized.Span()),
      ncclSuccess);
  EXPECT_EQ(ScaleBits(requantized, 0), ZPP_NONFINITE_SCALE_BITS);  // elements 0..63
  EXPECT_TRUE(std::isfinite(RefScale(requantized.ConstSpan(), 1)));
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
// a requantized piece marks the block non-finite.
TEST(NonFiniteOverflowTest, SumOverflowIsInfOrNaNBlockNeverFinite) {
  const Format format{8, 32, false};
  std::vector<double> values(32, 3e38);
  PieceBuffer piece(PieceBytes(32, ncclFloat32, format));
  ASSERT_EQ(Quantize(TensorOf(ncclFloat32, values).View(), format, {}, piece.Span()), ncclSuccess);
  const std::span<const std::byte> pieces[] = {piece.ConstSpan(), piece.ConstSpan()};
  HostTensor sum(ncclFloat32, 32);
  ASSERT_EQ(DequantizeReduce(pieces, 32, format, 1.0f, sum.MutableView()), ncclSuccess);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(sum.Get(i), std::numeric_limits<double>::infinity());
  PieceBuffer requantized(piece.size());
  ASSERT_EQ(DequantizeReduceRequantize(pieces, 32, format, 1.0f, format, {}, requantized.Span()),
            ncclSuccess);
  EXPECT_EQ(ScaleBits(requantized, 0), ZPP_NONFINITE_SCALE_BITS);
}

}  // namespace
}  // namespace zpp::codec::testing
