// qwZ's weight deltas on the CPU (codec/weight_delta.h): a delta applied to the reference it was
// taken against lands within half a delta step of the weights; every copy of the reference that
// applies the same messages stays bitwise equal to the others; a copy that differs from the
// sender's is never updated into silently wrong weights (NaN, counted); the message's bytes are
// as documented.
#include "codec/weight_delta.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codec_runs.h"
#include "zpp/format.h"

namespace zpp::codec::testing {
namespace {

constexpr size_t kCount = 3000;  // a tail block
constexpr uint32_t kItems = 3;   // nodes
const Format kDelta{4, 256, false};

// Step 0's weights of item i, and step s's: an update of at most 1e-3 per element per step.
std::vector<double> WeightsOf(uint32_t item, int step) {
  std::vector<double> w = Uniform(kCount, -1.0, 1.0, 50 + item);
  for (int s = 1; s <= step; ++s) {
    const std::vector<double> update = Uniform(kCount, -1e-3, 1e-3, 1000 * s + item);
    for (size_t i = 0; i < kCount; ++i) w[i] += update[i];
  }
  return w;
}

// What the inter-node stage gathers: item i's message, every `stride` bytes.
struct Messages {
  size_t stride = 0;
  PieceBuffer bytes{0};
};

Messages Encode(int step, const HostTensor& references, ncclDataType_t dtype) {
  Messages m;
  m.stride = DeltaMessageBytes(kCount, dtype, kDelta);
  m.bytes = PieceBuffer(m.stride * kItems);
  const size_t element = dtype == ncclFloat32 ? 4 : 2;
  for (uint32_t item = 0; item < kItems; ++item) {
    const HostTensor weights = TensorOf(dtype, WeightsOf(item, step));
    const ConstTensorView reference{
        static_cast<const std::byte*>(references.data()) + item * kCount * element, dtype, kCount};
    EXPECT_EQ(EncodeDelta(weights.View(), reference, kDelta, {},
                          m.bytes.Span().subspan(item * m.stride, m.stride)),
              ncclSuccess);
  }
  return m;
}

HostTensor StartingReferences(ncclDataType_t dtype) {
  std::vector<double> all;
  for (uint32_t item = 0; item < kItems; ++item) {
    const std::vector<double> w = WeightsOf(item, 0);
    all.insert(all.end(), w.begin(), w.end());
  }
  return TensorOf(dtype, all);
}

TEST(WeightDeltaTest, TwoCopiesStayEqualAndTrackTheWeights) {
  for (const ncclDataType_t dtype : {ncclFloat32, ncclBfloat16}) {
    const size_t element = dtype == ncclFloat32 ? 4 : 2;
    HostTensor sender = StartingReferences(dtype);
    HostTensor receiver = StartingReferences(dtype);
    uint32_t failures = 0;
    for (int step = 1; step <= 6; ++step) {
      const std::vector<double> before = sender.Values();
      const Messages m = Encode(step, sender, dtype);
      for (HostTensor* copy : {&sender, &receiver}) {
        ASSERT_EQ(ApplyDeltaBatch(m.bytes.ConstSpan(), m.stride, kItems, kCount, kDelta,
                                  copy->MutableView(), &failures),
                  ncclSuccess);
      }
      ASSERT_EQ(failures, 0u) << step;
      ASSERT_EQ(std::memcmp(sender.data(), receiver.data(), kItems * kCount * element), 0)
          << "step " << step;
      // Within half a 4-bit step of the block's difference (amax / 14), then the dtype's
      // rounding of the sum. In bf16 the difference is mostly the weights' own rounding.
      for (uint32_t item = 0; item < kItems; ++item) {
        const HostTensor weights = TensorOf(dtype, WeightsOf(item, step));
        for (size_t first = 0; first < kCount; first += kDelta.block) {
          const size_t end = std::min(kCount, first + kDelta.block);
          double amax = 0;
          for (size_t i = first; i < end; ++i) {
            amax = std::max(amax, std::fabs(weights.Get(i) - before[item * kCount + i]));
          }
          for (size_t i = first; i < end; ++i) {
            const double got = receiver.Get(item * kCount + i);
            const double bound =
                amax / 14 * (1 + 1e-5) + HalfUlp(dtype, std::fabs(got)) + HalfUlp(ncclFloat32, 1.0);
            ASSERT_LE(std::fabs(got - weights.Get(i)), bound)
                << DtypeName(dtype) << " step " << step << " item " << item << " " << i;
          }
        }
      }
    }
  }
}

// A receiver whose copy of item 1 differs from the sender's in one element: item 1 becomes NaN
// there, counted once; items 0 and 2 are applied as on the sender.
TEST(WeightDeltaTest, ACopyThatDiffersFromTheSendersBecomesNaN) {
  HostTensor sender = StartingReferences(ncclBfloat16);
  HostTensor receiver = StartingReferences(ncclBfloat16);
  receiver.Set(kCount + 17, receiver.Get(kCount + 17) + 0.25);
  const Messages m = Encode(1, sender, ncclBfloat16);
  uint32_t sender_failures = 0;
  uint32_t receiver_failures = 0;
  ASSERT_EQ(ApplyDeltaBatch(m.bytes.ConstSpan(), m.stride, kItems, kCount, kDelta,
                            sender.MutableView(), &sender_failures),
            ncclSuccess);
  ASSERT_EQ(ApplyDeltaBatch(m.bytes.ConstSpan(), m.stride, kItems, kCount, kDelta,
                            receiver.MutableView(), &receiver_failures),
            ncclSuccess);
  EXPECT_EQ(sender_failures, 0u);
  EXPECT_EQ(receiver_failures, 1u);
  for (size_t i = 0; i < kItems * kCount; ++i) {
    if (i / kCount == 1) {
      ASSERT_EQ(receiver.Bits(i), 0x7FC0u) << i;  // bf16's canonical NaN
    } else {
      ASSERT_EQ(receiver.Bits(i), sender.Bits(i)) << i;
    }
  }
}

TEST(WeightDeltaTest, MessageIsThePieceThenTheReferencesFingerprint) {
  HostTensor reference = StartingReferences(ncclFloat32);
  const Messages m = Encode(2, reference, ncclFloat32);
  const size_t piece = PieceBytes(kCount, ncclFloat32, kDelta);
  EXPECT_EQ(m.stride, piece + 16);
  uint64_t expected = 0;
  ASSERT_EQ(Fingerprint({static_cast<const std::byte*>(reference.data()) + 4 * kCount, 4 * kCount},
                        &expected),
            ncclSuccess);
  uint64_t trailer = 0;
  std::memcpy(&trailer, m.bytes.data() + m.stride + piece, 8);
  EXPECT_EQ(trailer, expected);
  for (size_t b = 8; b < 16; ++b) EXPECT_EQ(m.bytes.data()[m.stride + piece + b], std::byte{0});
  // The piece is the plain quantization of the fp32 difference.
  std::vector<double> difference = WeightsOf(1, 2);
  const std::vector<double> base = WeightsOf(1, 0);
  for (size_t i = 0; i < kCount; ++i) {
    difference[i] =
        static_cast<double>(static_cast<float>(difference[i]) - static_cast<float>(base[i]));
  }
  const HostTensor d = TensorOf(ncclFloat32, difference);
  PieceBuffer plain(piece);
  ASSERT_EQ(Quantize(d.View(), kDelta, {}, plain.Span()), ncclSuccess);
  EXPECT_EQ(std::memcmp(plain.data(), m.bytes.data() + m.stride, piece), 0);
}

}  // namespace
}  // namespace zpp::codec::testing
