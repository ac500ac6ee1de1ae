// bf16 is handled as bf16: DeepSpeed's qwZ read bf16 bits as fp16, which passes every test
// whose data happens to survive the mix-up. These tests use values where the two readings
// differ (and values only bf16 can hold), so any confusion of the two fails them.
#include <gtest/gtest.h>

#include <cmath>

#include "codec_runs.h"

namespace zpp::codec::testing {
namespace {

// The same 16-bit patterns read as bf16 and as fp16 encode different values; the codec must
// return the bf16 values for a bf16 tensor and the fp16 values for an fp16 tensor.
TEST(Bf16Test, SameBitsDifferentValues) {
  const std::vector<uint16_t> patterns = {0x4040, 0x3F80, 0xC2C8, 0x4120, 0x3C00, 0x0400};
  HostTensor as_bf16(ncclBfloat16, patterns.size());
  HostTensor as_fp16(ncclFloat16, patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) {
    as_bf16.SetBits(i, patterns[i]);
    as_fp16.SetBits(i, patterns[i]);
  }
  ASSERT_EQ(as_bf16.Get(0), 3.0);    // bf16 0x4040
  ASSERT_EQ(as_fp16.Get(0), 2.125);  // fp16 0x4040
  const Format format{8, 32, false};
  const RoundTrip bf16_trip = QuantizeAndBack(as_bf16, format, {}, ncclFloat32);
  const RoundTrip fp16_trip = QuantizeAndBack(as_fp16, format, {}, ncclFloat32);
  // 0xC2C8 is the largest magnitude either way: -100 as bf16, -3.390625 as fp16.
  ASSERT_EQ(as_bf16.Get(2), -100.0);
  ASSERT_EQ(as_fp16.Get(2), -3.390625);
  const double bf16_step = 100.0 / 127;
  const double fp16_step = 3.390625 / 127;
  for (size_t i = 0; i < patterns.size(); ++i) {
    EXPECT_NEAR(bf16_trip.output[i], as_bf16.Get(i), bf16_step / 2 * 1.0001) << i;
    EXPECT_NEAR(fp16_trip.output[i], as_fp16.Get(i), fp16_step / 2 * 1.0001) << i;
  }
  EXPECT_NE(bf16_trip.output[0], fp16_trip.output[0]);
  EXPECT_NE(bf16_trip.output[2], fp16_trip.output[2]);
}

// Magnitudes outside fp16's range (overflow at 65520, flush below 6e-8) survive in bf16.
TEST(Bf16Test, ValuesOutsideTheFp16RangeSurvive) {
  for (const double magnitude : {1e10, 1e37, 1e-10, 1e-30}) {
    std::vector<double> values = Gaussian(256, 12);
    for (double& value : values) value *= magnitude;
    const HostTensor input = TensorOf(ncclBfloat16, values);
    for (const int bits : {8, 4, 3, 2}) {
      for (const bool rotate : {false, true}) {
        const RoundTrip trip = QuantizeAndBack(input, {bits, 256, rotate}, {}, ncclBfloat16);
        const double error = RelativeL2(input.Values(), trip.output);
        EXPECT_LT(error, bits == 8 ? 0.02 : (bits == 4 ? 0.2 : 0.9)) << magnitude << " int" << bits;
      }
    }
  }
}

// Decoding into bf16 and into fp16 gives each format's own nearest value (bit patterns that
// differ), not one format's bits relabelled.
TEST(Bf16Test, OutputsAreEncodedInTheirOwnFormat) {
  const std::vector<double> values = {3.0, -1.5, 2.75, -3.3, 1.1, 2.2};
  const HostTensor input = TensorOf(ncclFloat32, values);
  const Format format{8, 32, false};
  PieceBuffer piece(PieceBytes(values.size(), ncclFloat32, format));
  ASSERT_EQ(Quantize(input.View(), format, {}, piece.Span()), ncclSuccess);
  const PlacedPiece placed{piece.ConstSpan(), 0};
  HostTensor to_bf16(ncclBfloat16, values.size());
  HostTensor to_fp16(ncclFloat16, values.size());
  ASSERT_EQ(Dequantize({&placed, 1}, values.size(), format, to_bf16.MutableView()), ncclSuccess);
  ASSERT_EQ(Dequantize({&placed, 1}, values.size(), format, to_fp16.MutableView()), ncclSuccess);
  const std::vector<double> decoded = RefDecodePiece(piece.ConstSpan(), values.size(), format);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(to_bf16.Bits(i), RefDoubleToBf16(static_cast<float>(decoded[i]))) << i;
    EXPECT_EQ(to_fp16.Bits(i), RefDoubleToHalf(static_cast<float>(decoded[i]))) << i;
    EXPECT_NE(to_bf16.Bits(i), to_fp16.Bits(i)) << i;
  }
}

}  // namespace
}  // namespace zpp::codec::testing
