// Dequantize: the decoded values are the format's (q * scale, rotated back) rounded once into
// the output dtype, and many pieces land each at its own offset, in any order, touching nothing
// else of the output.
#include <gtest/gtest.h>

#include <cmath>

#include "codec_runs.h"

namespace zpp::codec::testing {
namespace {

constexpr ncclDataType_t kDtypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16};

// The fp64 decode of the piece, rounded into the dtype, with the fp32 arithmetic of the codec
// allowed its rounding: one fp32 product, and for rotated pieces five butterfly stages.
double Tolerance(ncclDataType_t dtype, double value, double run_max, bool rotated) {
  const double fp32 = rotated ? std::ldexp(run_max, -18) : HalfUlp(ncclFloat32, value);
  return fp32 + HalfUlp(dtype, std::fabs(value) + fp32);
}

TEST(DequantizeTest, DecodesTheFormatForEveryDtypeAndFormat) {
  for (const ncclDataType_t dtype : kDtypes) {
    for (const int bits : {8, 4, 3, 2}) {
      for (const bool rotate : {false, true}) {
        const Format format{bits, 128, rotate};
        const HostTensor input = TensorOf(ncclFloat32, StudentT4(1000, 18));
        const RoundTrip trip = QuantizeAndBack(input, format, {}, dtype);
        const std::vector<double> decoded = RefDecodePiece(trip.piece.ConstSpan(), 1000, format);
        for (size_t i = 0; i < 1000; ++i) {
          double run_max = 0;
          for (size_t j = i / 32 * 32; j < std::min<size_t>(1000, i / 32 * 32 + 32); ++j) {
            run_max = std::max(run_max, std::fabs(decoded[j]));
          }
          ASSERT_NEAR(trip.output[i], decoded[i], Tolerance(dtype, decoded[i], run_max, rotate))
              << DtypeName(dtype) << " int" << bits << (rotate ? " rotated " : " ") << i;
        }
      }
    }
  }
}

// Four ranks' pieces placed in reverse order with gaps between them: each lands where it is
// told, and the gaps keep their poison.
TEST(DequantizeTest, PiecesLandAtTheirOwnOffsets) {
  const size_t count = 777;
  const size_t stride = 800;  // 23 elements of gap after each piece
  const Format format{4, 64, true};
  std::vector<PieceBuffer> pieces;
  std::vector<std::vector<double>> expected;
  for (int rank = 0; rank < 4; ++rank) {
    const HostTensor input = TensorOf(ncclBfloat16, Gaussian(count, 100 + rank));
    expected.push_back(QuantizeAndBack(input, format, {}, ncclBfloat16).output);
    pieces.emplace_back(PieceBytes(count, ncclBfloat16, format));
    ASSERT_EQ(Quantize(input.View(), format, {}, pieces.back().Span()), ncclSuccess);
  }
  std::vector<PlacedPiece> placed;
  for (int rank = 0; rank < 4; ++rank) {
    placed.push_back({pieces[rank].ConstSpan(), (3 - rank) * stride});
  }
  HostTensor output(ncclBfloat16, 4 * stride);
  output.Poison();
  ASSERT_EQ(Dequantize(placed, count, format, output.MutableView()), ncclSuccess);
  for (int rank = 0; rank < 4; ++rank) {
    const size_t base = (3 - rank) * stride;
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(output.Get(base + i), expected[rank][i]);
    for (size_t i = count; i < stride; ++i) ASSERT_EQ(output.Bits(base + i), 0xA5A5u);
  }
}

}  // namespace
}  // namespace zpp::codec::testing
