// include/zpp/format.h: the size function against sizes worked out by hand, alignment, and the
// byte layout a quantized piece really has (scales first, int4 low nibble first, int2 low bits
// first, int3 in little-endian groups of eight per three bytes).
#include "zpp/format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "codec/codec.h"
#include "reference.h"

namespace zpp::codec {
namespace {

using testing::HostTensor;
using testing::PieceBuffer;
using testing::RefQuantized;
using testing::RefScale;

TEST(FormatTest, SizesWorkedOutByHand) {
  // 1000 int8 in blocks of 256: 4 scales = 16 bytes; 1000 payload bytes padded to 1008.
  EXPECT_EQ(zppPieceBytes(1000, ncclFloat32, 8, 256), 16u + 1008u);
  // 1001 int4 in blocks of 32: 32 scales = 128 bytes; 501 payload bytes padded to 512.
  EXPECT_EQ(zppPieceBytes(1001, ncclBfloat16, 4, 32), 128u + 512u);
  // One element: one scale (16 with padding) and one payload byte (16).
  EXPECT_EQ(zppPieceBytes(1, ncclFloat16, 4, 4096), 32u);
  EXPECT_EQ(zppPieceBytes(0, ncclFloat32, 8, 256), 0u);
  // 2^20 int4 in blocks of 256: 4096 scales, 2^19 payload bytes.
  EXPECT_EQ(zppPieceBytes(1u << 20, ncclFloat32, 4, 256), 16384u + 524288u);
  EXPECT_EQ(zppPieceScaleBytes(1000, 256), 16u);
  EXPECT_EQ(zppPiecePayloadBytes(1001, 4), 512u);
  // int2: four per byte. 1001 elements fill 251 bytes (the last holds one), padded to 256.
  EXPECT_EQ(zppPiecePayloadBytes(1001, 2), 256u);
  EXPECT_EQ(zppPiecePayloadBytes(1024, 2), 256u);
  EXPECT_EQ(zppPieceBytes(1u << 20, ncclFloat32, 2, 256), 16384u + 262144u);
  // int3: whole groups of eight in three bytes. 1001 elements are 126 groups (the last holds
  // one), 378 bytes padded to 384; 83 elements are 11 groups, 33 bytes padded to 48 (a payload
  // cut at ceil(3 * 83 / 8) = 32 bytes would end inside the last group).
  EXPECT_EQ(zppPiecePayloadBytes(1001, 3), 384u);
  EXPECT_EQ(zppPiecePayloadBytes(83, 3), 48u);
  EXPECT_EQ(zppPiecePayloadBytes(1024, 3), 384u);
  EXPECT_EQ(zppPieceBytes(1u << 20, ncclFloat32, 3, 256), 16384u + 393216u);
}

TEST(FormatTest, SizeIsAMultipleOf16AndIndependentOfDtype) {
  for (uint64_t count : {1ull, 7ull, 31ull, 32ull, 33ull, 255ull, 257ull, 4097ull, 123457ull}) {
    for (int bits : {2, 3, 4, 8}) {
      for (int block = ZPP_BLOCK_MIN; block <= ZPP_BLOCK_MAX; block *= 2) {
        const uint64_t bytes = zppPieceBytes(count, ncclFloat32, bits, block);
        EXPECT_EQ(bytes % ZPP_PIECE_ALIGN, 0u);
        EXPECT_GE(bytes, 4 * zppPieceBlocks(count, block) + count * bits / 8);
        EXPECT_EQ(bytes, zppPieceBytes(count, ncclFloat16, bits, block));
        EXPECT_EQ(bytes, zppPieceBytes(count, ncclBfloat16, bits, block));
      }
    }
  }
}

TEST(FormatTest, InvalidFormatsHaveNoSize) {
  EXPECT_EQ(zppPieceBytes(100, ncclInt32, 8, 256), 0u);
  EXPECT_EQ(zppPieceBytes(100, ncclFloat64, 8, 256), 0u);
  EXPECT_EQ(zppPieceBytes(100, ncclFloat32, 1, 256), 0u);
  EXPECT_EQ(zppPieceBytes(100, ncclFloat32, 5, 256), 0u);
  EXPECT_EQ(zppPieceBytes(100, ncclFloat32, 6, 256), 0u);
  EXPECT_EQ(zppPieceBytes(100, ncclFloat32, 8, 16), 0u);
  EXPECT_EQ(zppPieceBytes(100, ncclFloat32, 8, 8192), 0u);
  EXPECT_EQ(zppPieceBytes(100, ncclFloat32, 8, 96), 0u);
  EXPECT_TRUE(zppFormatValid(ncclBfloat16, 4, 4096));
  EXPECT_FALSE(zppFormatValid(ncclFloat32, 4, 0));
}

// Values k * 2^-3 for k = q: the block's amax 7 * 2^-3 gives scale 2^-3 exactly.
TEST(FormatTest, Int4LayoutIsScalesThenLowNibbleFirst) {
  const Format format{4, 32, false};
  const std::vector<int> q = {7, -1, 3, -7, 0, 1, -2, 5};
  HostTensor input(ncclFloat32, 40);  // one full block and a tail block of 8
  for (size_t i = 0; i < 40; ++i) input.Set(i, q[i % q.size()] * 0.125);
  PieceBuffer piece(PieceBytes(40, ncclFloat32, format));
  ASSERT_EQ(piece.size(), 16u + 32u);  // 2 scales padded to 16, 20 payload bytes padded to 32
  ASSERT_EQ(Quantize(input.View(), format, {}, piece.Span()), ncclSuccess);

  const std::byte* bytes = piece.data();
  float scale0;
  float scale1;
  std::memcpy(&scale0, bytes, 4);
  std::memcpy(&scale1, bytes + 4, 4);
  EXPECT_EQ(scale0, 0.125f);
  EXPECT_EQ(scale1, 0.125f);
  for (size_t i = 8; i < 16; ++i) EXPECT_EQ(bytes[i], std::byte{0}) << "scale padding " << i;
  // Elements 0, 1 = 7, -1: 0x7 in the low nibble, 0xF in the high one.
  EXPECT_EQ(bytes[16], std::byte{0xF7});
  EXPECT_EQ(bytes[17], std::byte{0x93});  // 3, -7
  EXPECT_EQ(bytes[18], std::byte{0x10});  // 0, 1
  EXPECT_EQ(bytes[19], std::byte{0x5E});  // -2, 5
  for (size_t i = 16 + 20; i < 48; ++i) EXPECT_EQ(bytes[i], std::byte{0}) << "payload padding";
}

// Values q * 0.25 with q in -1..1: every block's amax 0.25 is its scale. A tail of 6 elements
// leaves the last payload byte half filled (its high bits 0).
TEST(FormatTest, Int2LayoutIsFourPerByteLowBitsFirst) {
  const Format format{2, 32, false};
  const std::vector<int> q = {1, -1, 0, 1, -1, -1, 0, 0};
  HostTensor input(ncclBfloat16, 38);
  for (size_t i = 0; i < 38; ++i) input.Set(i, q[i % q.size()] * 0.25);
  PieceBuffer piece(PieceBytes(38, ncclBfloat16, format));
  ASSERT_EQ(piece.size(), 16u + 16u);  // 2 scales padded to 16, 10 payload bytes padded to 16
  ASSERT_EQ(Quantize(input.View(), format, {}, piece.Span()), ncclSuccess);

  const std::byte* bytes = piece.data();
  float scale0;
  float scale1;
  std::memcpy(&scale0, bytes, 4);
  std::memcpy(&scale1, bytes + 4, 4);
  EXPECT_EQ(scale0, 0.25f);
  EXPECT_EQ(scale1, 0.25f);
  // Elements 0..3 = 1, -1, 0, 1: 01, 11, 00, 01 from the low bits up = 0b01'00'11'01.
  EXPECT_EQ(bytes[16], std::byte{0x4D});
  // Elements 4..7 = -1, -1, 0, 0: 0b00'00'11'11.
  EXPECT_EQ(bytes[17], std::byte{0x0F});
  // Elements 36, 37 (the tail's last two) = -1, -1 and two empty places.
  EXPECT_EQ(bytes[16 + 9], std::byte{0x0F});
  for (size_t i = 16 + 10; i < 32; ++i) EXPECT_EQ(bytes[i], std::byte{0}) << "payload padding";
  HostTensor output(ncclBfloat16, 38);
  const PlacedPiece placed{piece.ConstSpan(), 0};
  ASSERT_EQ(Dequantize({&placed, 1}, 38, format, output.MutableView()), ncclSuccess);
  for (size_t i = 0; i < 38; ++i) EXPECT_EQ(output.Get(i), input.Get(i)) << i;
}

// Values q * 0.25 with q in -3..3: every block's amax 0.75 gives scale 0.25 exactly. 43 elements:
// a block of 32 and a tail of 11, whose last group of eight holds three.
TEST(FormatTest, Int3LayoutIsEightPerThreeBytesLowBitsFirst) {
  const Format format{3, 32, false};
  const std::vector<int> q = {3, -1, 0, 2, -3, 1, -2, 0};
  HostTensor input(ncclFloat32, 43);
  for (size_t i = 0; i < 43; ++i) input.Set(i, q[i % q.size()] * 0.25);
  PieceBuffer piece(PieceBytes(43, ncclFloat32, format));
  ASSERT_EQ(piece.size(), 16u + 32u);  // 2 scales padded to 16, 6 groups = 18 bytes padded to 32
  ASSERT_EQ(Quantize(input.View(), format, {}, piece.Span()), ncclSuccess);

  const std::byte* bytes = piece.data();
  EXPECT_EQ(RefScale(piece.ConstSpan(), 0), 0.25f);
  EXPECT_EQ(RefScale(piece.ConstSpan(), 1), 0.25f);
  // 3, -1, 0, 2, -3, 1, -2, 0 = 011, 111, 000, 010, 101, 001, 110, 000 from bit 0 up: the 24-bit
  // word 0x18D43B, little-endian. Every full group is the same.
  for (size_t group = 0; group < 5; ++group) {
    EXPECT_EQ(bytes[16 + 3 * group], std::byte{0x3B}) << group;
    EXPECT_EQ(bytes[16 + 3 * group + 1], std::byte{0xD4}) << group;
    EXPECT_EQ(bytes[16 + 3 * group + 2], std::byte{0x18}) << group;
  }
  // Elements 40..42 = 3, -1, 0 and five empty places.
  EXPECT_EQ(bytes[16 + 15], std::byte{0x3B});
  EXPECT_EQ(bytes[16 + 16], std::byte{0x00});
  EXPECT_EQ(bytes[16 + 17], std::byte{0x00});
  for (size_t i = 16 + 18; i < 48; ++i) EXPECT_EQ(bytes[i], std::byte{0}) << "payload padding";
  for (size_t i = 0; i < 43; ++i) {
    EXPECT_EQ(RefQuantized(piece.ConstSpan(), 43, format, i), q[i % q.size()]) << i;
  }
  HostTensor output(ncclFloat32, 43);
  const PlacedPiece placed{piece.ConstSpan(), 0};
  ASSERT_EQ(Dequantize({&placed, 1}, 43, format, output.MutableView()), ncclSuccess);
  for (size_t i = 0; i < 43; ++i) EXPECT_EQ(output.Get(i), input.Get(i)) << i;
}

TEST(FormatTest, Int8LayoutIsOneTwosComplementBytePerElement) {
  const Format format{8, 32, false};
  HostTensor input(ncclFloat16, 3);
  input.Set(0, 127 * 0.5);
  input.Set(1, -127 * 0.5);
  input.Set(2, -0.5);
  PieceBuffer piece(PieceBytes(3, ncclFloat16, format));
  ASSERT_EQ(piece.size(), 32u);
  ASSERT_EQ(Quantize(input.View(), format, {}, piece.Span()), ncclSuccess);
  float scale;
  std::memcpy(&scale, piece.data(), 4);
  EXPECT_EQ(scale, 0.5f);
  EXPECT_EQ(piece.data()[16], std::byte{0x7F});
  EXPECT_EQ(piece.data()[17], std::byte{0x81});
  EXPECT_EQ(piece.data()[18], std::byte{0xFF});
  for (size_t i = 19; i < 32; ++i) EXPECT_EQ(piece.data()[i], std::byte{0});
}

}  // namespace
}  // namespace zpp::codec
