// The batched kernels (one launch per batch, places by formula) against the CPU batched codec,
// bit for bit, with the batch shapes the plans use past 128 items and terms (qgZ on more than
// 128 ranks or nodes), misaligned and aligned places in one batch, stochastic rounding and
// rotation, and error feedback. Skips, saying why, where there is no CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/batch.h"
#include "codec/codec.h"
#include "codec_gpu/codec_gpu.h"
#include "device_buffer.h"

namespace zpp::codec::testing {
namespace {

// Host bytes, poisoned; callers that need pieces 16-byte aligned take an aligned start inside.
std::vector<std::byte> HostBytes(size_t n) { return std::vector<std::byte>(n, std::byte{kPoison}); }

std::vector<std::byte> RandomBf16(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  std::vector<std::byte> out(count * 2);
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &values[i], 4);
    const uint16_t half = static_cast<uint16_t>(bits >> 16);
    std::memcpy(out.data() + 2 * i, &half, 2);
  }
  return out;
}

class GpuBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu::DeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  }
};

// qgZ's stage one on 130 nodes of 3 ranks: item local x nodes + node takes chunk node x locals
// + local; rotated int4 with stochastic rounding, and an odd count (misaligned chunks).
TEST_F(GpuBatchTest, QuantizeBatchIsTheCpuBatchBitwise) {
  const uint32_t locals = 3, nodes = 130;
  const size_t count = 101;
  const Format format{4, 32, true};
  const Rounding rounding{true, 5, 1, 2, 0};
  const size_t piece = PieceBytes(count, ncclBfloat16, format);
  const std::vector<std::byte> input = RandomBf16(count * locals * nodes, 1);
  BatchMap map;
  map.radix[1] = locals;
  map.radix[2] = nodes;
  map.from[1] = count;
  map.from[2] = count * locals;
  map.to[1] = piece * nodes;
  map.to[2] = piece;
  const size_t total = piece * locals * nodes;
  DeviceBuffer device_input(input.data(), input.size()), device_pieces(total);
  ASSERT_EQ(gpu::QuantizeBatch({device_input.data(), ncclBfloat16, count * locals * nodes}, count,
                               map, format, rounding, device_pieces.Span(), nullptr),
            ncclSuccess);
  std::vector<std::byte> cpu = HostBytes(total + 16);
  auto* aligned = cpu.data() + (16 - reinterpret_cast<uintptr_t>(cpu.data()) % 16) % 16;
  ASSERT_EQ(QuantizeBatch({input.data(), ncclBfloat16, count * locals * nodes}, count, map, format,
                          rounding, {aligned, total}),
            ncclSuccess);
  EXPECT_EQ(std::memcmp(device_pieces.ToHost().data(), aligned, total), 0);
}

// 300 pieces into a bf16 output with an odd count: every other place misaligned.
TEST_F(GpuBatchTest, DequantizeBatchIsTheCpuBatchBitwise) {
  const uint32_t items = 300;
  const size_t count = 37;
  const Format format{8, 32, false};
  const size_t piece = PieceBytes(count, ncclBfloat16, format);
  const std::vector<std::byte> input = RandomBf16(count * items, 2);
  std::vector<std::byte> pieces = HostBytes(piece * items + 16);
  auto* aligned = pieces.data() + (16 - reinterpret_cast<uintptr_t>(pieces.data()) % 16) % 16;
  ASSERT_EQ(
      QuantizeBatch({input.data(), ncclBfloat16, count * items}, count,
                    BatchMap::Strided(items, count, piece), format, {}, {aligned, piece * items}),
      ncclSuccess);
  const std::vector<std::byte> host_pieces(aligned, aligned + piece * items);
  DeviceBuffer device_pieces(host_pieces.data(), host_pieces.size());
  DeviceBuffer device_out(count * items * 2);
  const BatchMap places = BatchMap::Strided(items, piece, count);
  ASSERT_EQ(gpu::DequantizeBatch(device_pieces.Span(), count, places, format,
                                 {device_out.data(), ncclBfloat16, count * items}, nullptr),
            ncclSuccess);
  std::vector<std::byte> cpu = HostBytes(count * items * 2);
  ASSERT_EQ(DequantizeBatch(host_pieces, count, places, format,
                            {cpu.data(), ncclBfloat16, count * items}),
            ncclSuccess);
  EXPECT_EQ(device_out.ToHost(), cpu);
}

// 3 sums of 200 terms, then 200 sums of 3 terms requantized 8 -> 4 and 8 -> 2.
TEST_F(GpuBatchTest, ReduceBatchesAreTheCpuBatchesBitwise) {
  const size_t count = 300;
  const Format format{8, 64, false};
  const size_t piece = PieceBytes(count, ncclFloat32, format);
  const uint32_t n = 600;
  const std::vector<std::byte> input = RandomBf16(count * n, 3);
  std::vector<std::byte> storage = HostBytes(piece * n + 16);
  auto* aligned = storage.data() + (16 - reinterpret_cast<uintptr_t>(storage.data()) % 16) % 16;
  ASSERT_EQ(QuantizeBatch({input.data(), ncclBfloat16, count * n}, count,
                          BatchMap::Strided(n, count, piece), format, {}, {aligned, piece * n}),
            ncclSuccess);
  const std::vector<std::byte> pieces(aligned, aligned + piece * n);
  DeviceBuffer device_pieces(pieces.data(), pieces.size());

  const ReduceBatch wide{3, 200, piece, 3 * piece};
  DeviceBuffer device_sums(3 * count * 2);
  ASSERT_EQ(gpu::DequantizeReduceBatch(device_pieces.Span(), wide, count, format, 0.25f,
                                       {device_sums.data(), ncclBfloat16, 3 * count}, nullptr),
            ncclSuccess);
  std::vector<std::byte> cpu_sums = HostBytes(3 * count * 2);
  ASSERT_EQ(DequantizeReduceBatch(pieces, wide, count, format, 0.25f,
                                  {cpu_sums.data(), ncclBfloat16, 3 * count}),
            ncclSuccess);
  EXPECT_EQ(device_sums.ToHost(), cpu_sums);

  const ReduceBatch many{200, 3, piece, 200 * piece};
  for (const int out_bits : {4, 2}) {  // qgZ 8/4 and 8/2
    const Format out_format{out_bits, 64, false};
    const size_t out_piece = PieceBytes(count, ncclFloat32, out_format);
    DeviceBuffer device_out(out_piece * 200);
    ASSERT_EQ(gpu::DequantizeReduceRequantizeBatch(device_pieces.Span(), many, count, format, 1.0f,
                                                   out_format, {}, device_out.Span(), nullptr),
              ncclSuccess);
    std::vector<std::byte> cpu_out = HostBytes(out_piece * 200 + 16);
    auto* out = cpu_out.data() + (16 - reinterpret_cast<uintptr_t>(cpu_out.data()) % 16) % 16;
    ASSERT_EQ(DequantizeReduceRequantizeBatch(pieces, many, count, format, 1.0f, out_format, {},
                                              {out, out_piece * 200}),
              ncclSuccess);
    EXPECT_EQ(std::memcmp(device_out.ToHost().data(), out, out_piece * 200), 0) << out_bits;
  }
}

// qgZ's error feedback (ZPP_QGZ_EF): 5 sums of 3 terms, requantized 8 -> 4 and 8 -> 2, twice:
// first with no residual kept, then adding the residual the first wrote. The outputs and the
// residuals are the CPU batch's, bit for bit, a tail block and a non-finite element included.
TEST_F(GpuBatchTest, FeedbackBatchIsTheCpuBatchBitwise) {
  const size_t count = 1000;  // a tail block of 232
  const Format format{8, 256, false};
  const size_t piece = PieceBytes(count, ncclFloat32, format);
  const uint32_t n = 15;
  std::vector<std::byte> input = RandomBf16(count * n, 7);
  const uint16_t infinity = 0x7F80;
  std::memcpy(input.data() + 2 * (3 * count + 300), &infinity, 2);  // in sum 3's second block
  std::vector<std::byte> storage = HostBytes(piece * n + 16);
  auto* aligned = storage.data() + (16 - reinterpret_cast<uintptr_t>(storage.data()) % 16) % 16;
  ASSERT_EQ(QuantizeBatch({input.data(), ncclBfloat16, count * n}, count,
                          BatchMap::Strided(n, count, piece), format, {}, {aligned, piece * n}),
            ncclSuccess);
  const std::vector<std::byte> pieces(aligned, aligned + piece * n);
  DeviceBuffer device_pieces(pieces.data(), pieces.size());
  const ReduceBatch batch{5, 3, piece, 5 * piece};
  const Format residual_format{8, 256, false};
  const size_t residual = PieceBytes(count, ncclFloat32, residual_format);
  for (const int out_bits : {4, 2}) {
    const Format out_format{out_bits, 256, false};
    const size_t out_piece = PieceBytes(count, ncclFloat32, out_format);
    std::vector<std::byte> cpu_storage = HostBytes(out_piece * 5 + residual * 5 + 32);
    auto* cpu_out =
        cpu_storage.data() + (16 - reinterpret_cast<uintptr_t>(cpu_storage.data()) % 16) % 16;
    auto* cpu_residual = cpu_out + out_piece * 5;
    DeviceBuffer device_out(out_piece * 5);
    DeviceBuffer device_residual(residual * 5);
    for (const bool valid : {false, true}) {
      ASSERT_EQ(DequantizeReduceRequantizeFeedbackBatch(
                    pieces, batch, count, format, out_format, {}, {cpu_out, out_piece * 5},
                    residual_format, valid, {cpu_residual, residual * 5}),
                ncclSuccess);
      ASSERT_EQ(gpu::DequantizeReduceRequantizeFeedbackBatch(
                    device_pieces.Span(), batch, count, format, out_format, {}, device_out.Span(),
                    residual_format, valid, device_residual.Span(), nullptr),
                ncclSuccess);
      EXPECT_EQ(std::memcmp(device_out.ToHost().data(), cpu_out, out_piece * 5), 0)
          << "int" << out_bits << (valid ? " with" : " without") << " a residual";
      EXPECT_EQ(std::memcmp(device_residual.ToHost().data(), cpu_residual, residual * 5), 0)
          << "int" << out_bits << (valid ? " with" : " without") << " a residual";
    }
  }
}

// hpZ's unquantized placement: 4 x 50 shards of an odd size, transposed.
TEST_F(GpuBatchTest, CopyBatchIsTheCpuBatch) {
  const uint32_t locals = 4, nodes = 50;
  const size_t shard = 42;
  std::vector<std::byte> source(shard * locals * nodes);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::byte>(i * 7);
  BatchMap map;
  map.radix[1] = locals;
  map.radix[2] = nodes;
  map.from[1] = nodes * shard;
  map.from[2] = shard;
  map.to[1] = shard;
  map.to[2] = locals * shard;
  DeviceBuffer device_src(source.data(), source.size()), device_dst(source.size());
  ASSERT_EQ(gpu::CopyBatch(device_src.Span(), device_dst.Span(), shard, map, nullptr), ncclSuccess);
  std::vector<std::byte> cpu = HostBytes(source.size());
  ASSERT_EQ(CopyBatch(source, cpu, shard, map), ncclSuccess);
  EXPECT_EQ(device_dst.ToHost(), cpu);
}

}  // namespace
}  // namespace zpp::codec::testing
