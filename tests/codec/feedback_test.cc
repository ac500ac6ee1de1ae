// The requantize with error feedback (ZPP_QGZ_EF) against the plain requantize and fp64: with
// no residual it is the plain requantize, bit for bit; the residual it writes is what that
// requantization lost, to int8's step; what it adds back comes out in the next sum; a sum that
// is not finite leaves a zero residual, never a NaN that would poison every later step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "codec_runs.h"
#include "zpp/format.h"

namespace zpp::codec::testing {
namespace {

constexpr size_t kCount = 3000;  // a tail in every block size
const Format kIn{8, 256, false};
const Format kOut{4, 256, false};
const Format kResidual{8, 256, false};

struct Terms {
  std::vector<PieceBuffer> buffers;
  std::vector<std::span<const std::byte>> spans;
};

Terms MakeTerms(const std::vector<double>& values_of_first) {
  Terms terms;
  for (int j = 0; j < 2; ++j) {
    const std::vector<double> values = j == 0 ? values_of_first : Gaussian(kCount, 300 + j);
    const HostTensor input = TensorOf(ncclFloat32, values);
    terms.buffers.emplace_back(PieceBytes(kCount, ncclFloat32, kIn));
    EXPECT_EQ(Quantize(input.View(), kIn, {}, terms.buffers.back().Span()), ncclSuccess);
  }
  for (const PieceBuffer& buffer : terms.buffers) terms.spans.push_back(buffer.ConstSpan());
  return terms;
}

std::vector<double> SumOf(const Terms& terms) {
  std::vector<double> sum(kCount, 0.0);
  for (const PieceBuffer& buffer : terms.buffers) {
    const std::vector<double> decoded = RefDecodePiece(buffer.ConstSpan(), kCount, kIn);
    for (size_t i = 0; i < kCount; ++i) sum[i] += decoded[i];
  }
  return sum;
}

TEST(FeedbackTest, NoResidualIsThePlainRequantizeAndTheResidualIsItsLoss) {
  const Terms terms = MakeTerms(Gaussian(kCount, 300));
  PieceBuffer plain(PieceBytes(kCount, ncclFloat32, kOut));
  ASSERT_EQ(DequantizeReduceRequantize(terms.spans, kCount, kIn, 1.0f, kOut, {}, plain.Span()),
            ncclSuccess);
  PieceBuffer fed(PieceBytes(kCount, ncclFloat32, kOut));
  PieceBuffer residual(PieceBytes(kCount, ncclFloat32, kResidual));
  // Its bytes (0xA5 each) are never read: `valid` is false.
  ASSERT_EQ(DequantizeReduceRequantizeFeedback(terms.spans, kCount, kIn, 1.0f, kOut, {}, fed.Span(),
                                               {kResidual, false, residual.Span()}),
            ncclSuccess);
  EXPECT_TRUE(
      std::equal(fed.ConstSpan().begin(), fed.ConstSpan().end(), plain.ConstSpan().begin()));
  const std::vector<double> sum = SumOf(terms);
  const std::vector<double> out = RefDecodePiece(plain.ConstSpan(), kCount, kOut);
  const std::vector<double> kept = RefDecodePiece(residual.ConstSpan(), kCount, kResidual);
  for (size_t block = 0; block < kCount; block += 256) {
    double largest = 0;
    for (size_t i = block; i < std::min(kCount, block + 256); ++i) {
      largest = std::max(largest, std::fabs(sum[i] - out[i]));
    }
    for (size_t i = block; i < std::min(kCount, block + 256); ++i) {
      // int8's step in this block is largest / 127: the residual is the loss to half of it.
      EXPECT_NEAR(kept[i], sum[i] - out[i], largest / 127 * 0.51 + 1e-6) << i;
    }
  }
}

// Step two adds step one's residual: what the two steps' outputs sum to is nearer twice the
// exact sum than two plain requantizations are.
TEST(FeedbackTest, TheNextStepAddsTheLossBack) {
  const Terms terms = MakeTerms(Gaussian(kCount, 300));
  const std::vector<double> sum = SumOf(terms);
  PieceBuffer residual(PieceBytes(kCount, ncclFloat32, kResidual));
  PieceBuffer first(PieceBytes(kCount, ncclFloat32, kOut));
  PieceBuffer second(PieceBytes(kCount, ncclFloat32, kOut));
  ASSERT_EQ(DequantizeReduceRequantizeFeedback(terms.spans, kCount, kIn, 1.0f, kOut, {},
                                               first.Span(), {kResidual, false, residual.Span()}),
            ncclSuccess);
  ASSERT_EQ(DequantizeReduceRequantizeFeedback(terms.spans, kCount, kIn, 1.0f, kOut, {},
                                               second.Span(), {kResidual, true, residual.Span()}),
            ncclSuccess);
  const std::vector<double> a = RefDecodePiece(first.ConstSpan(), kCount, kOut);
  const std::vector<double> b = RefDecodePiece(second.ConstSpan(), kCount, kOut);
  double fed = 0, plain = 0;
  for (size_t i = 0; i < kCount; ++i) {
    fed += std::pow(a[i] + b[i] - 2 * sum[i], 2);
    plain += std::pow(2 * a[i] - 2 * sum[i], 2);
  }
  EXPECT_LT(fed, plain / 2) << "fed " << fed << " plain " << plain;
}

TEST(FeedbackTest, ANonFiniteSumLeavesAZeroResidual) {
  std::vector<double> values = Gaussian(kCount, 300);
  values[10] = std::numeric_limits<float>::infinity();
  const Terms terms = MakeTerms(values);
  PieceBuffer out(PieceBytes(kCount, ncclFloat32, kOut));
  PieceBuffer residual(PieceBytes(kCount, ncclFloat32, kResidual));
  ASSERT_EQ(DequantizeReduceRequantizeFeedback(terms.spans, kCount, kIn, 1.0f, kOut, {}, out.Span(),
                                               {kResidual, false, residual.Span()}),
            ncclSuccess);
  const std::vector<double> kept = RefDecodePiece(residual.ConstSpan(), kCount, kResidual);
  for (size_t i = 0; i < kCount; ++i) ASSERT_TRUE(std::isfinite(kept[i])) << i;
  EXPECT_EQ(kept[10], 0.0) << "the non-finite element's residual";
  // Its block's finite elements keep their own losses (format.h: per-element marking).
  size_t nonzero = 0;
  for (size_t i = 0; i < 256; ++i) nonzero += kept[i] != 0.0;
  EXPECT_GT(nonzero, 128u);
}

TEST(FeedbackTest, RotatedFormatsAreRefused) {
  const Terms terms = MakeTerms(Gaussian(kCount, 300));
  PieceBuffer out(PieceBytes(kCount, ncclFloat32, Format{4, 256, true}));
  PieceBuffer residual(PieceBytes(kCount, ncclFloat32, kResidual));
  EXPECT_EQ(DequantizeReduceRequantizeFeedback(terms.spans, kCount, kIn, 1.0f, Format{4, 256, true},
                                               {}, out.Span(), {kResidual, false, residual.Span()}),
            ncclInvalidArgument);
}

}  // namespace
}  // namespace zpp::codec::testing
