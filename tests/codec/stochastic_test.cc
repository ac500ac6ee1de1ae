// Stochastic rounding: unbiased (the mean signed error over 10^6 values is within 3 standard
// errors of 0, where round-to-nearest's systematic error would not be), within one step per
// element, and reproducible: the same (seed, rank, epoch, block) gives the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "codec_runs.h"

namespace zpp::codec::testing {
namespace {

constexpr size_t kValues = 1000000;

Rounding Stochastic(uint64_t seed, uint32_t rank = 0, uint64_t epoch = 0) {
  Rounding rounding;
  rounding.stochastic = true;
  rounding.seed = seed;
  rounding.rank = rank;
  rounding.epoch = epoch;
  return rounding;
}

struct ErrorStats {
  double mean;
  double standard_error;
};

ErrorStats SignedError(std::span<const double> exact, std::span<const double> decoded) {
  double sum = 0;
  double sum_squares = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double error = decoded[i] - exact[i];
    sum += error;
    sum_squares += error * error;
  }
  const double n = static_cast<double>(exact.size());
  const double mean = sum / n;
  const double variance = sum_squares / n - mean * mean;
  return {mean, std::sqrt(variance / n)};
}

TEST(StochasticTest, UnbiasedWithinThreeStandardErrors) {
  for (const int bits : {2, 3, 4, 8}) {
    const Format format{bits, 256, false};
    const HostTensor input = TensorOf(ncclFloat32, Uniform(kValues, -1.0, 1.0, 13));
    const ErrorStats stochastic = SignedError(
        input.Values(), QuantizeAndBack(input, format, Stochastic(1), ncclFloat32).output);
    EXPECT_LT(std::fabs(stochastic.mean), 3 * stochastic.standard_error)
        << "int" << bits << " mean " << stochastic.mean << " se " << stochastic.standard_error;
  }
}

// Every value 0.3 of a step above a grid point: nearest rounding always rounds down (a bias of
// 0.3 steps), stochastic rounding up 30% of the time (no bias).
TEST(StochasticTest, UnbiasedWhereNearestRoundingIsNot) {
  for (const int bits : {2, 3, 4, 8}) {
    const int qmax = bits == 2 ? 1 : (bits == 3 ? 3 : (bits == 4 ? 7 : 127));
    std::vector<double> values = Uniform(kValues, 0.0, 1.0, 17);
    for (size_t i = 0; i < kValues; ++i) {
      values[i] = i % 256 == 0 ? 1.0  // every block's amax is 1: the step is 1 / qmax
                               : (std::floor(values[i] * (qmax - 1)) + 0.3) / qmax;
    }
    const HostTensor input = TensorOf(ncclFloat32, values);
    const Format format{bits, 256, false};
    const ErrorStats stochastic = SignedError(
        input.Values(), QuantizeAndBack(input, format, Stochastic(1), ncclFloat32).output);
    EXPECT_LT(std::fabs(stochastic.mean), 3 * stochastic.standard_error)
        << "int" << bits << " mean " << stochastic.mean << " se " << stochastic.standard_error;
    const ErrorStats nearest =
        SignedError(input.Values(), QuantizeAndBack(input, format, {}, ncclFloat32).output);
    EXPECT_GT(std::fabs(nearest.mean), 100 * stochastic.standard_error)
        << "the data should expose nearest rounding's bias";
  }
}

TEST(StochasticTest, EveryElementWithinOneStep) {
  const HostTensor input = TensorOf(ncclBfloat16, Gaussian(65536, 14));
  const Format format{4, 128, true};
  const RoundTrip trip = QuantizeAndBack(input, format, Stochastic(2), ncclFloat32);
  const std::vector<double> rotated = RefRotateForward(input.Values(), 128);
  for (size_t i = 0; i < input.count(); ++i) {
    const double scale = RefScale(trip.piece.ConstSpan(), i / 128);
    const double decoded = RefQuantized(trip.piece.ConstSpan(), input.count(), format, i) * scale;
    ASSERT_LT(std::fabs(decoded - rotated[i]), scale * 1.0001) << i;
  }
}

std::vector<std::byte> Bytes(const PieceBuffer& piece) {
  return {piece.ConstSpan().begin(), piece.ConstSpan().end()};
}

TEST(StochasticTest, SameKeySameBitsOtherKeyOtherBits) {
  const HostTensor input = TensorOf(ncclFloat16, Gaussian(10000, 15));
  const Format format{4, 256, false};
  const auto run = [&](const Rounding& rounding) {
    return Bytes(QuantizeAndBack(input, format, rounding, ncclFloat16).piece);
  };
  const std::vector<std::byte> first = run(Stochastic(42, 3, 7));
  EXPECT_EQ(first, run(Stochastic(42, 3, 7)));
  EXPECT_NE(first, run(Stochastic(43, 3, 7)));
  EXPECT_NE(first, run(Stochastic(42, 4, 7)));
  EXPECT_NE(first, run(Stochastic(42, 3, 8)));
  EXPECT_NE(first, run({}));
}

// A tensor quantized as two pieces, the second starting at block 4 (Rounding::first_block),
// draws the same random bits as the whole tensor quantized at once.
TEST(StochasticTest, FirstBlockContinuesTheStream) {
  const Format format{8, 256, false};
  const std::vector<double> values = Gaussian(8 * 256, 16);
  const HostTensor whole = TensorOf(ncclFloat32, values);
  const RoundTrip at_once = QuantizeAndBack(whole, format, Stochastic(5), ncclFloat32);
  for (const size_t part : {0, 1}) {
    const std::vector<double> half(values.begin() + part * 1024,
                                   values.begin() + (part + 1) * 1024);
    Rounding rounding = Stochastic(5);
    rounding.first_block = part * 4;
    const RoundTrip piece =
        QuantizeAndBack(TensorOf(ncclFloat32, half), format, rounding, ncclFloat32);
    for (size_t i = 0; i < 1024; ++i) {
      ASSERT_EQ(piece.output[i], at_once.output[part * 1024 + i]) << part << " " << i;
    }
  }
}

}  // namespace
}  // namespace zpp::codec::testing
