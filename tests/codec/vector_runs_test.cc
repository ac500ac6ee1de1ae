// The CPU codec's encode and decode loops are written without branches so that they vectorize
// (src/codec/block_codec.cc); here they are held bit for bit to the per-element functions every
// kernel shares (kernels/math/block_math.h), read back through format.h's own layout
// (reference.h), on blocks that mix every class of value: Gaussian at scales from denormal to
// 1e30, signed zeros, NaN and infinities, exact ties of the grid, all-zero and all-NaN blocks.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "kernels/math/codec_math.h"
#include "reference.h"

namespace zpp::codec::testing {
namespace {

// Block b of `block` values: Gaussian at a scale chosen by b, then specials at random places.
std::vector<float> MixedBlocks(size_t blocks, size_t block, uint64_t seed) {
  constexpr float kScales[] = {1e-42f, 1e-38f, 1e-20f, 1.0f, 3e4f, 1e30f};
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN()};
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(blocks * block);
  for (size_t b = 0; b < blocks; ++b) {
    const float scale = kScales[b % std::size(kScales)];
    for (size_t i = 0; i < block; ++i) values[b * block + i] = normal(generator) * scale;
    const size_t kind = b % 9;
    if (kind == 6) std::fill_n(values.begin() + static_cast<long>(b * block), block, 0.0f);
    if (kind == 7) std::fill_n(values.begin() + static_cast<long>(b * block), block, specials[4]);
    if (kind == 8) {  // exact ties: k + 1/2 steps of a grid whose amax is 127 or 7 steps
      for (size_t i = 0; i < block; ++i) values[b * block + i] = 0.5f * static_cast<float>(i % 15);
      values[b * block] = 127.0f;
    }
    for (int s = 0; s < 3 && kind < 6; ++s) {
      values[b * block + generator() % block] = specials[generator() % std::size(specials)];
    }
  }
  return values;
}

// What block_math.h's functions give element i: its block's scale and its integer.
struct Expected {
  float scale;
  int q;
};

// Element i of a piece of `count` values.
Expected PerElement(const std::vector<float>& values, size_t count, size_t block, int bits,
                    size_t i) {
  const size_t start = i / block * block;
  uint32_t amax = 0;
  for (size_t j = start; j < start + block && j < count; ++j) {
    amax = std::max(amax, FiniteMagnitudeBits(values[j]));
  }
  const float scale = BlockScale(amax, QMax(bits));
  return {scale, QuantizeNearest(values[i], GridMapOf(scale), QMax(bits))};
}

TEST(VectorRunsTest, EncodeAndDecodeEqualThePerElementFunctions) {
  for (const int bits : {8, 4, 3, 2}) {
    for (const size_t block : {32u, 256u}) {
      const size_t count = 27 * block + 5;  // a short tail block, an odd count
      const std::vector<float> values = MixedBlocks(28, block, 100 + bits);
      const Format format{bits, static_cast<int>(block), false};
      PieceBuffer piece(PieceBytes(count, ncclFloat32, format));
      ASSERT_EQ(Quantize({values.data(), ncclFloat32, count}, format, {}, piece.Span()),
                ncclSuccess);
      std::vector<float> decoded(count);
      const PlacedPiece placed{piece.ConstSpan(), 0};
      ASSERT_EQ(Dequantize({&placed, 1}, count, format, {decoded.data(), ncclFloat32, count}),
                ncclSuccess);
      for (size_t i = 0; i < count; ++i) {
        const Expected expected = PerElement(values, count, block, bits, i);
        const float scale = RefScale(piece.ConstSpan(), i / block);
        const int q = RefQuantized(piece.ConstSpan(), count, format, i);
        ASSERT_EQ(std::bit_cast<uint32_t>(scale), std::bit_cast<uint32_t>(expected.scale))
            << bits << " bits, block " << block << ", element " << i;
        ASSERT_EQ(q, expected.q) << bits << " bits, block " << block << ", element " << i << " = "
                                 << values[i];
        ASSERT_EQ(std::bit_cast<uint32_t>(decoded[i]),
                  std::bit_cast<uint32_t>(DequantizeValue(q, scale, QMax(bits))))
            << bits << " bits, block " << block << ", element " << i;
      }
    }
  }
}

// bf16's own loops (element_io.h): every bf16 pattern widened, and fp32 patterns of every class
// (random bits, NaN payloads, infinities, the largest finite values that round to Inf, exact
// ties) narrowed, against Bf16ToFloat and FloatToBf16.
TEST(VectorRunsTest, Bf16LoopsEqualThePerElementFunctions) {
  std::vector<uint16_t> narrow(1u << 16);
  for (uint32_t b = 0; b < narrow.size(); ++b) narrow[b] = static_cast<uint16_t>(b);
  std::vector<float> widened(narrow.size()), summed(narrow.size(), 0.0f);
  LoadElements(narrow.data(), ncclBfloat16, 0, narrow.size(), widened.data());
  AddElements(narrow.data(), ncclBfloat16, narrow.size(), summed.data());
  for (uint32_t b = 0; b < narrow.size(); ++b) {
    const float expected = Bf16ToFloat(static_cast<uint16_t>(b));
    ASSERT_EQ(std::bit_cast<uint32_t>(widened[b]), std::bit_cast<uint32_t>(expected)) << b;
    const float sum = 0.0f + expected;  // what a += into a zero makes of it
    ASSERT_EQ(std::bit_cast<uint32_t>(summed[b]), std::bit_cast<uint32_t>(sum)) << b;
  }
  std::mt19937 generator(7);
  std::vector<uint32_t> patterns = {0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0x7F7F8000u,
                                    0x7F7F7FFFu, 0x7FC00001u, 0xFFFFFFFFu, 0x7F800001u,
                                    0x00008000u, 0x00018000u, 0x80000000u, 0x00000001u};
  for (int i = 0; i < 1 << 20; ++i) patterns.push_back(generator());
  for (uint32_t hi = 0; hi < (1u << 16); hi += 97) {  // ties to even on both parities
    patterns.push_back(hi << 16 | 0x8000u);
  }
  std::vector<float> values(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) values[i] = std::bit_cast<float>(patterns[i]);
  std::vector<uint16_t> stored(values.size());
  StoreElements(stored.data(), ncclBfloat16, 0, values.size(), values.data());
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(stored[i], FloatToBf16(values[i])) << std::hex << patterns[i];
  }
}

}  // namespace
}  // namespace zpp::codec::testing
