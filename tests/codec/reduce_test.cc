// The fused dequantize-reduce against fp64: the sum of the pieces' fp64 decodes, times the
// factor, within fp32 summation and output rounding; requantized, within half a step of the
// new format; and for every mix of rotated and plain formats.
#include <gtest/gtest.h>

#include <cmath>

#include "codec_runs.h"
#include "zpp/format.h"

namespace zpp::codec::testing {
namespace {

constexpr size_t kCount = 3000;  // not a multiple of any block: a tail everywhere

struct Pieces {
  std::vector<PieceBuffer> buffers;
  std::vector<std::span<const std::byte>> spans;
  std::vector<double> sum;  // fp64 sum of the decoded pieces
};

Pieces MakePieces(int k, const Format& format) {
  Pieces pieces;
  pieces.sum.assign(kCount, 0.0);
  for (int j = 0; j < k; ++j) {
    const HostTensor input = TensorOf(ncclFloat32, Gaussian(kCount, 200 + j));
    pieces.buffers.emplace_back(PieceBytes(kCount, ncclFloat32, format));
    EXPECT_EQ(Quantize(input.View(), format, {}, pieces.buffers.back().Span()), ncclSuccess);
    const std::vector<double> decoded =
        RefDecodePiece(pieces.buffers.back().ConstSpan(), kCount, format);
    for (size_t i = 0; i < kCount; ++i) pieces.sum[i] += decoded[i];
  }
  for (const PieceBuffer& buffer : pieces.buffers) pieces.spans.push_back(buffer.ConstSpan());
  return pieces;
}

TEST(ReduceTest, TensorOutputIsTheScaledSum) {
  for (const ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    for (const int k : {1, 2, 5}) {
      for (const bool rotate : {false, true}) {
        const Format format{8, 256, rotate};
        const Pieces pieces = MakePieces(k, format);
        const float factor = 1.0f / static_cast<float>(k);  // an average
        HostTensor output(dtype, kCount);
        output.Poison();
        ASSERT_EQ(DequantizeReduce(pieces.spans, kCount, format, factor, output.MutableView()),
                  ncclSuccess);
        for (size_t i = 0; i < kCount; ++i) {
          const double expected = pieces.sum[i] * factor;
          const double tolerance = 1e-5 * (k + 1) + HalfUlp(dtype, expected) * 1.01;
          ASSERT_NEAR(output.Get(i), expected, tolerance)
              << DtypeName(dtype) << " k " << k << (rotate ? " rotated " : " ") << i;
        }
      }
    }
  }
}

TEST(ReduceTest, RequantizedSumIsWithinHalfAStepOfTheNewFormat) {
  for (const bool rotate : {false, true}) {
    for (const bool out_rotate : {false, true}) {
      const Format format{8, 128, rotate};
      const Format out_format{4, 32, out_rotate};
      const Pieces pieces = MakePieces(3, format);
      PieceBuffer out(PieceBytes(kCount, ncclFloat32, out_format));
      ASSERT_EQ(DequantizeReduceRequantize(pieces.spans, kCount, format, 1.0f, out_format, {},
                                           out.Span()),
                ncclSuccess);
      // In the output's domain, each value is within half a step of its block's scale.
      const std::vector<double> target = out_rotate ? RefRotateForward(pieces.sum, 32) : pieces.sum;
      for (size_t i = 0; i < kCount; ++i) {
        const double scale = RefScale(out.ConstSpan(), i / 32);
        const double decoded = RefQuantized(out.ConstSpan(), kCount, out_format, i) * scale;
        ASSERT_NEAR(decoded, target[i], scale * 0.5001 + 1e-5) << rotate << out_rotate << " " << i;
      }
    }
  }
}

// Requantizing one piece to its own format changes domain never and finds the same integers
// (the new scale, fl(fl(qmax * s) / qmax), is s to within an fp32 step).
TEST(ReduceTest, SinglePieceSameFormatKeepsItsIntegers) {
  for (const bool rotate : {false, true}) {
    const Format format{4, 64, rotate};
    const Pieces pieces = MakePieces(1, format);
    PieceBuffer out(pieces.buffers[0].size());
    ASSERT_EQ(
        DequantizeReduceRequantize(pieces.spans, kCount, format, 1.0f, format, {}, out.Span()),
        ncclSuccess);
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(RefQuantized(out.ConstSpan(), kCount, format, i),
                RefQuantized(pieces.spans[0], kCount, format, i))
          << i;
    }
    for (size_t block = 0; block < zppPieceBlocks(kCount, 64); ++block) {
      EXPECT_FLOAT_EQ(RefScale(out.ConstSpan(), block), RefScale(pieces.spans[0], block));
    }
  }
}

}  // namespace
}  // namespace zpp::codec::testing
