// Accuracy of the CPU codec against fp64: the per-element bound for every dtype, bit width and
// block size, and the relative-L2 limits on Gaussian and Student-t data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "codec_runs.h"
#include "kernels/math/codec_params.h"

namespace zpp::codec::testing {
namespace {

constexpr size_t kMillion = size_t{1} << 20;
constexpr ncclDataType_t kDtypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16};

int QMaxOf(int bits) { return bits == 2 ? 1 : (bits == 3 ? 3 : (bits == 4 ? 7 : 127)); }

// |x - dq(q(x))| <= amax / (2 qmax), widened by the fp32 rounding of the scale and of q * scale
// and by the output dtype's rounding (plus one fp32 denormal step for denormal scales).
double ElementBound(double amax, int bits, double magnitude, ncclDataType_t output_dtype) {
  const double half_step = amax / (2.0 * QMaxOf(bits));
  const double m = magnitude + half_step;
  return half_step * (1 + std::ldexp(1.0, -14)) + HalfUlp(ncclFloat32, m) +
         HalfUlp(output_dtype, m) + std::ldexp(1.0, -149);
}

class ElementBoundTest : public ::testing::TestWithParam<std::tuple<ncclDataType_t, int, int>> {};

TEST_P(ElementBoundTest, EveryElementWithinHalfAStep) {
  const auto [dtype, bits, block] = GetParam();
  const Format format{bits, block, false};
  // Blocks of different magnitudes, and a tail block.
  std::vector<double> values = Gaussian(9 * 4096 + 77, 11);
  for (size_t i = 0; i < values.size(); ++i) values[i] *= std::ldexp(1.0, int(i / 1000 % 9) - 4);
  const HostTensor input = TensorOf(dtype, values);
  const RoundTrip trip = QuantizeAndBack(input, format, {}, dtype);
  const std::vector<double> x = input.Values();
  for (size_t first = 0; first < x.size(); first += block) {
    const size_t end = std::min(x.size(), first + block);
    double amax = 0;
    for (size_t i = first; i < end; ++i) amax = std::max(amax, std::fabs(x[i]));
    for (size_t i = first; i < end; ++i) {
      ASSERT_LE(std::fabs(x[i] - trip.output[i]), ElementBound(amax, bits, std::fabs(x[i]), dtype))
          << "element " << i << " x " << x[i] << " dq " << trip.output[i];
    }
  }
}

// With the rotation the bound holds in the rotated domain: the fp64 rotation of the input
// against q * scale read from the piece, widened by the fp32 rotation's rounding.
TEST_P(ElementBoundTest, RotatedDomainWithinHalfAStep) {
  const auto [dtype, bits, block] = GetParam();
  const Format format{bits, block, true};
  const HostTensor input = TensorOf(dtype, StudentT4(3 * 4096 + 45, 12));
  const RoundTrip trip = QuantizeAndBack(input, format, {}, dtype);
  const std::vector<double> rotated = RefRotateForward(input.Values(), static_cast<size_t>(block));
  const size_t count = input.count();
  for (size_t first = 0; first < count; first += block) {
    const size_t end = std::min(count, first + block);
    double amax = 0;
    double input_max = 0;
    for (size_t i = first; i < end; ++i) {
      amax = std::max(amax, std::fabs(rotated[i]));
      input_max = std::max(input_max, std::fabs(input.Get(i)));
    }
    const double slack = std::ldexp(input_max, -18);
    for (size_t i = first; i < end; ++i) {
      const double decoded = RefQuantized(trip.piece.ConstSpan(), count, format, i) *
                             static_cast<double>(RefScale(trip.piece.ConstSpan(), i / block));
      ASSERT_LE(std::fabs(rotated[i] - decoded),
                ElementBound(amax + slack, bits, std::fabs(rotated[i]), ncclFloat32) + slack)
          << "element " << i;
    }
  }
  // And back in the input's domain the error is of the same size (H32 / sqrt(32) is orthogonal).
  EXPECT_LT(RelativeL2(input.Values(), trip.output),
            bits == 8 ? 0.02 : (bits == 4 ? 0.25 : (bits == 3 ? 0.5 : 0.9)));
}

// A piece that ends inside a 32-run: its tail block is unrotated whole, so it is as accurate as
// an unrotated format's tail block. Rotating its complete runs would leave them about 1/sqrt(32)
// of the unrotated tail values that set the block's scale: 50 to 70% error at int4.
TEST(RotationTailTest, ATailBlockEndingInsideARunIsAsAccurateAsUnrotated) {
  for (const int bits : {8, 4}) {
    constexpr size_t kBlock = 256, kCount = 4 * kBlock + 200 + 13;  // tail: 6 runs and 13 more
    const HostTensor input = TensorOf(ncclFloat32, Gaussian(kCount, 21));
    const RoundTrip rotated = QuantizeAndBack(input, Format{bits, kBlock, true}, {}, ncclFloat32);
    const RoundTrip plain = QuantizeAndBack(input, Format{bits, kBlock, false}, {}, ncclFloat32);
    const std::vector<double> values = input.Values();
    const auto tail = [&](const std::vector<double>& v) {
      return std::vector<double>(v.begin() + 4 * kBlock, v.end());
    };
    EXPECT_EQ(RelativeL2(tail(values), tail(rotated.output)),
              RelativeL2(tail(values), tail(plain.output)))
        << bits << " bits";
    EXPECT_LT(RelativeL2(values, rotated.output), bits == 8 ? 0.01 : 0.15) << bits << " bits";
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, ElementBoundTest,
                         ::testing::Combine(::testing::ValuesIn(kDtypes),
                                            ::testing::Values(8, 4, 3, 2),
                                            ::testing::Values(32, 256, 4096)),
                         [](const auto& param_info) {
                           return std::string(DtypeName(std::get<0>(param_info.param))) + "_int" +
                                  std::to_string(std::get<1>(param_info.param)) + "_block" +
                                  std::to_string(std::get<2>(param_info.param));
                         });

double GaussianError(ncclDataType_t dtype, int bits, int block) {
  const HostTensor input = TensorOf(dtype, Gaussian(kMillion, 21));
  return RelativeL2(input.Values(), QuantizeAndBack(input, {bits, block, false}, {}, dtype).output);
}

TEST(AccuracyTest, GaussianInt8Block256Within0_80Percent) {
  for (const ncclDataType_t dtype : kDtypes) {
    const double error = GaussianError(dtype, 8, 256);
    EXPECT_LE(error, 0.0080) << DtypeName(dtype);
    RecordProperty(std::string("rel_l2_") + DtypeName(dtype), std::to_string(error));
  }
}

TEST(AccuracyTest, GaussianInt4Block32Within10_5Percent) {
  for (const ncclDataType_t dtype : kDtypes) {
    const double error = GaussianError(dtype, 4, 32);
    EXPECT_LE(error, 0.105) << DtypeName(dtype);
    RecordProperty(std::string("rel_l2_") + DtypeName(dtype), std::to_string(error));
  }
}

// Seven levels per block (-3..3 times amax / 3): about 0.226 relative L2 on Gaussian blocks of
// 32 by a direct computation (numpy, 2^20 values), between int4's 0.097 and int2's 0.657.
TEST(AccuracyTest, GaussianInt3Block32Within24Percent) {
  for (const ncclDataType_t dtype : kDtypes) {
    const double error = GaussianError(dtype, 3, 32);
    EXPECT_LE(error, 0.24) << DtypeName(dtype);
    EXPECT_GE(error, 0.21) << DtypeName(dtype);
    RecordProperty(std::string("rel_l2_") + DtypeName(dtype), std::to_string(error));
  }
}

// Three levels per block (-scale, 0, +scale with scale = amax): about 0.66 relative L2 on
// Gaussian blocks of 32, by a direct computation (numpy, 2^20 values). int2 is for gradients
// whose error is fed back (ZPP_QGZ_EF), not for values used as they are.
TEST(AccuracyTest, GaussianInt2Block32Within68Percent) {
  for (const ncclDataType_t dtype : kDtypes) {
    const double error = GaussianError(dtype, 2, 32);
    EXPECT_LE(error, 0.68) << DtypeName(dtype);
    EXPECT_GE(error, 0.63) << DtypeName(dtype);
    RecordProperty(std::string("rel_l2_") + DtypeName(dtype), std::to_string(error));
  }
}

TEST(AccuracyTest, RotationCutsStudentTInt4Error) {
  for (const ncclDataType_t dtype : kDtypes) {
    const HostTensor input = TensorOf(dtype, StudentT4(kMillion, 31));
    const std::vector<double> exact = input.Values();
    const double plain =
        RelativeL2(exact, QuantizeAndBack(input, {4, 256, false}, {}, dtype).output);
    const double rotated =
        RelativeL2(exact, QuantizeAndBack(input, {4, 256, true}, {}, dtype).output);
    EXPECT_LE(rotated, 0.14) << DtypeName(dtype);
    EXPECT_GE(plain / rotated, 1.5)
        << DtypeName(dtype) << " plain " << plain << " rotated " << rotated;
  }
}

}  // namespace
}  // namespace zpp::codec::testing
