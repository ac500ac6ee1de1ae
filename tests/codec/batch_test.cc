// The batched codec on the CPU (codec/batch.h): each item equal to its item-level call, items
// placed by formula as the plans place them, no limit on items or terms, bad batches rejected
// before anything is written.
#include "codec/batch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "codec/codec.h"
#include "kernels/math/batch_places.h"

namespace zpp::codec {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// 16-byte aligned host bytes.
struct Bytes {
  explicit Bytes(size_t n) : storage(n + 16, std::byte{0x5A}) {}
  std::byte* data() {
    auto address = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((16 - address % 16) % 16);
  }
  std::span<std::byte> span(size_t n) { return {data(), n}; }
  std::vector<std::byte> storage;
};

TEST(BatchMapTest, PlacesItemsInMixedRadix) {
  BatchMap map;
  map.radix[0] = 2;
  map.radix[1] = 3;
  map.radix[2] = 4;
  map.from[0] = 100, map.from[1] = 10, map.from[2] = 1;
  map.to[0] = 1, map.to[1] = 2, map.to[2] = 6;
  EXPECT_EQ(map.items(), 24u);
  uint64_t from = 0, to = 0;
  map.Place(23, &from, &to);  // digits (1, 2, 3)
  EXPECT_EQ(from, 123u);
  EXPECT_EQ(to, 1u + 4u + 18u);
  EXPECT_EQ(map.LastFrom(), 123u);
  EXPECT_EQ(map.LastTo(), 23u);
}

// The kernels' division by magic numbers is exact: every small item and divisor, the
// extremes, and random pairs, against BatchMap::Place's plain division.
TEST(BatchMapTest, KernelPlacesAreExact) {
  std::mt19937 rng(5);
  std::vector<uint32_t> divisors = {1,           2,           3,           7,          8,
                                    130,         255,         256,         65535,      65536,
                                    0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFFu};
  for (int i = 0; i < 200; ++i) divisors.push_back(rng() | 1u);
  for (uint32_t d = 1; d < 300; ++d) divisors.push_back(d);
  for (uint32_t d : divisors) {
    const FastDivide f = FastDivide::Of(d);
    const uint32_t a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * d, 0xFFFFFFFFu, 0xFFFFFFFEu, a, b}) {
      ASSERT_EQ(f.Quotient(n), n / d) << n << " / " << d;
    }
  }
  BatchMap map;
  map.radix[0] = 5;
  map.radix[1] = 130;
  map.radix[2] = 3;
  map.from[0] = 1, map.from[1] = 5, map.from[2] = 650;
  map.to[0] = 7, map.to[1] = 11, map.to[2] = 13;
  const BatchPlaces places = BatchPlaces::Of(map);
  EXPECT_EQ(places.items, map.items());
  for (uint32_t item = 0; item < map.items(); ++item) {
    uint64_t from = 0, to = 0, kernel_from = 1, kernel_to = 1;
    map.Place(item, &from, &to);
    places.Place(item, &kernel_from, &kernel_to);
    ASSERT_EQ(from, kernel_from) << item;
    ASSERT_EQ(to, kernel_to) << item;
  }
}

// The hierarchical plan's quantize: item local x nodes + node takes chunk node x locals + local.
TEST(BatchTest, QuantizeBatchEqualsItemByItem) {
  const int locals = 3, nodes = 5;
  const size_t count = 77;
  const Format format{4, 32, true};
  const Rounding rounding{true, 9, 2, 3, 0};
  const size_t piece = PieceBytes(count, ncclFloat32, format);
  const std::vector<float> input = Random(count * locals * nodes, 1);
  BatchMap map;
  map.radix[1] = locals;
  map.radix[2] = nodes;
  map.from[1] = count;
  map.from[2] = count * locals;
  map.to[1] = piece * nodes;
  map.to[2] = piece;
  Bytes batch(piece * locals * nodes), single(piece * locals * nodes);
  ASSERT_EQ(QuantizeBatch({input.data(), ncclFloat32, input.size()}, count, map, format, rounding,
                          batch.span(piece * locals * nodes)),
            ncclSuccess);
  for (int local = 0; local < locals; ++local) {
    for (int node = 0; node < nodes; ++node) {
      const uint64_t item = local * nodes + node;
      const float* chunk = input.data() + (node * locals + local) * count;
      ASSERT_EQ(
          Quantize({chunk, ncclFloat32, count}, format, ItemRounding(rounding, count, format, item),
                   single.span(piece * locals * nodes).subspan(item * piece, piece)),
          ncclSuccess);
    }
  }
  EXPECT_EQ(std::memcmp(batch.data(), single.data(), piece * locals * nodes), 0);
}

// 200 terms in one sum and 150 sums in one batch: no piece limit.
TEST(BatchTest, ReduceBatchesHaveNoPieceLimit) {
  const size_t count = 40;
  const Format format{8, 32, false};
  const size_t piece = PieceBytes(count, ncclFloat32, format);
  const uint32_t items = 150, terms = 200;
  Bytes pieces(piece * items * terms);
  for (uint32_t i = 0; i < items * terms; ++i) {
    const std::vector<float> values = Random(count, i + 7);
    ASSERT_EQ(Quantize({values.data(), ncclFloat32, count}, format, {},
                       pieces.span(piece * items * terms).subspan(i * piece, piece)),
              ncclSuccess);
  }
  // Sum s takes pieces s, s + items, s + 2 items, ...: the plans' stride.
  const ReduceBatch batch{items, terms, piece, piece * items};
  std::vector<float> sums(items * count);
  ASSERT_EQ(DequantizeReduceBatch(pieces.span(piece * items * terms), batch, count, format, 0.5f,
                                  {sums.data(), ncclFloat32, sums.size()}),
            ncclSuccess);
  const uint32_t s = items - 1;
  std::vector<std::span<const std::byte>> list;
  for (uint32_t t = 0; t < terms; ++t) {
    list.push_back(pieces.span(piece * items * terms).subspan((s + t * items) * piece, piece));
  }
  std::vector<float> one(count);
  ASSERT_EQ(DequantizeReduce(list, count, format, 0.5f, {one.data(), ncclFloat32, count}),
            ncclSuccess);
  EXPECT_EQ(std::memcmp(one.data(), sums.data() + s * count, count * sizeof(float)), 0);

  const Format out_format{4, 64, false};
  const size_t out_piece = PieceBytes(count, ncclFloat32, out_format);
  Bytes requantized(out_piece * items), single(out_piece);
  ASSERT_EQ(
      DequantizeReduceRequantizeBatch(pieces.span(piece * items * terms), batch, count, format,
                                      1.0f, out_format, {}, requantized.span(out_piece * items)),
      ncclSuccess);
  ASSERT_EQ(
      DequantizeReduceRequantize(list, count, format, 1.0f, out_format, {}, single.span(out_piece)),
      ncclSuccess);
  EXPECT_EQ(std::memcmp(single.data(), requantized.data() + s * out_piece, out_piece), 0);
}

TEST(BatchTest, BadBatchesAreRejectedBeforeAnyWrite) {
  const size_t count = 64;
  const Format format{8, 32, false};
  const size_t piece = PieceBytes(count, ncclFloat32, format);
  const std::vector<float> input = Random(count * 4, 3);
  Bytes pieces(piece * 4);
  const std::vector<std::byte> before(pieces.data(), pieces.data() + piece * 4);
  // Five items where the buffers hold four.
  EXPECT_EQ(QuantizeBatch({input.data(), ncclFloat32, input.size()}, count,
                          BatchMap::Strided(5, count, piece), format, {}, pieces.span(piece * 4)),
            ncclInvalidArgument);
  // A piece stride that breaks the 16-byte alignment.
  EXPECT_EQ(
      QuantizeBatch({input.data(), ncclFloat32, input.size()}, count,
                    BatchMap::Strided(2, count, piece + 4), format, {}, pieces.span(piece * 4)),
      ncclInvalidArgument);
  BatchMap empty_digit;
  empty_digit.radix[0] = 0;
  EXPECT_EQ(QuantizeBatch({input.data(), ncclFloat32, input.size()}, count, empty_digit, format, {},
                          pieces.span(piece * 4)),
            ncclInvalidArgument);
  EXPECT_EQ(std::memcmp(before.data(), pieces.data(), piece * 4), 0);
  // A sum reaching past the pieces.
  std::vector<float> out(count);
  EXPECT_EQ(DequantizeReduceBatch(pieces.span(piece * 4), {1, 5, 0, piece}, count, format, 1.0f,
                                  {out.data(), ncclFloat32, count}),
            ncclInvalidArgument);
  // A copy past the destination.
  std::vector<std::byte> src(100), dst(100);
  EXPECT_EQ(CopyBatch(src, dst, 30, BatchMap::Strided(4, 10, 30)), ncclInvalidArgument);
  EXPECT_EQ(CopyBatch(src, dst, 30, BatchMap::Strided(3, 10, 30)), ncclSuccess);
}

}  // namespace
}  // namespace zpp::codec
