// The CUDA kernels against the CPU codec, bit for bit, for every dtype, bit width, block size,
// rotation and rounding, on data drawn fresh each run (the seed is printed on failure), with
// every output buffer poisoned first so that an element the kernels fail to write shows. Skips,
// saying why, where there is no CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "codec/codec.h"
#include "codec_gpu/codec_gpu.h"
#include "device_buffer.h"
#include "reference.h"

namespace zpp::codec::testing {
namespace {

constexpr ncclDataType_t kDtypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16};
// The first byte where the two differ, or -1.
long FirstDifference(std::span<const std::byte> a, std::span<const std::byte> b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<long>(i);
  }
  return -1;
}

// The whole allocation behind a HostTensor made with `offset`: what a device copy must match.
std::span<const std::byte> Allocation(const HostTensor& tensor, size_t offset) {
  const auto* start =
      static_cast<const std::byte*>(tensor.data()) - offset * ElementSize(tensor.dtype());
  return {start, (tensor.count() + offset) * ElementSize(tensor.dtype())};
}

uint64_t FreshSeed() {
  return (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
}

// Gaussian values whose magnitude changes every 4096 elements, with spans of denormals and of
// zeros, and a NaN or an infinity about every 100000 elements (so most blocks stay finite).
HostTensor RandomTensor(ncclDataType_t dtype, size_t count, size_t offset, uint64_t seed) {
  HostTensor tensor(dtype, count, offset);
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> pick(0, 99999);
  const double denormal = dtype == ncclFloat16 ? 1e-6 : 1e-39;
  for (size_t i = 0; i < count; ++i) {
    const size_t span = i / 4096;
    double value = normal(generator) * std::ldexp(1.0, static_cast<int>(span % 7) - 3);
    if (span % 5 == 3) value *= denormal;
    if (span % 5 == 4 && i % 4096 < 300) value = 0.0;
    const int roll = pick(generator);
    if (roll == 0) value = std::numeric_limits<double>::quiet_NaN();
    if (roll == 1) value = std::numeric_limits<double>::infinity();
    if (roll == 2) value = -std::numeric_limits<double>::infinity();
    tensor.Set(i, value);
  }
  return tensor;
}

using Combo = std::tuple<ncclDataType_t, int, int, bool, bool>;  // dtype bits block rotate sr

// A CUDA stream per test; skips, with the reason, where there is no device.
template <typename Base>
class WithGpuStream : public Base {
 protected:
  void SetUp() override {
    std::string reason;
    if (!gpu::DeviceAvailable(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

class GpuCodecTest : public WithGpuStream<::testing::TestWithParam<Combo>> {};

TEST_P(GpuCodecTest, QuantizeAndDequantizeMatchTheCpuBitwise) {
  const auto [dtype, bits, block, rotate, stochastic] = GetParam();
  const Format format{bits, block, rotate};
  Rounding rounding;
  rounding.stochastic = stochastic;
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  rounding.seed = seed;
  rounding.rank = 3;
  rounding.epoch = 11;
  rounding.first_block = 5;
  for (const size_t count : {size_t{1}, size_t{31}, size_t{3 * 4096 + 45}, size_t{1000003}}) {
    for (const size_t offset : {size_t{0}, size_t{3}}) {
      SCOPED_TRACE("count " + std::to_string(count) + " offset " + std::to_string(offset));
      const HostTensor input = RandomTensor(dtype, count, offset, seed + count + offset);
      const size_t piece_bytes = PieceBytes(count, dtype, format);
      PieceBuffer cpu_piece(piece_bytes);
      ASSERT_EQ(Quantize(input.View(), format, rounding, cpu_piece.Span()), ncclSuccess);

      DeviceBuffer device_input(Allocation(input, offset).data(), Allocation(input, offset).size());
      const ConstTensorView device_view{device_input.data() + offset * ElementSize(dtype), dtype,
                                        count};
      DeviceBuffer device_piece(piece_bytes);
      ASSERT_EQ(gpu::Quantize(device_view, format, rounding, device_piece.Span(), stream_),
                ncclSuccess);
      ASSERT_EQ(FirstDifference(device_piece.ToHost(), cpu_piece.ConstSpan()), -1) << "piece";

      for (const ncclDataType_t output_dtype : kDtypes) {
        HostTensor cpu_output(output_dtype, count, offset);
        std::memset(const_cast<std::byte*>(Allocation(cpu_output, offset).data()), kPoison,
                    Allocation(cpu_output, offset).size());
        const PlacedPiece cpu_placed{cpu_piece.ConstSpan(), offset};
        TensorView cpu_view{
            static_cast<std::byte*>(cpu_output.data()) - offset * ElementSize(output_dtype),
            output_dtype, count + offset};
        ASSERT_EQ(Dequantize({&cpu_placed, 1}, count, format, cpu_view), ncclSuccess);

        DeviceBuffer device_output((count + offset) * ElementSize(output_dtype));
        const PlacedPiece device_placed{device_piece.ConstSpan(), offset};
        ASSERT_EQ(gpu::Dequantize({&device_placed, 1}, count, format,
                                  {device_output.data(), output_dtype, count + offset}, stream_),
                  ncclSuccess);
        ASSERT_EQ(FirstDifference(device_output.ToHost(), Allocation(cpu_output, offset)), -1)
            << "output " << DtypeName(output_dtype);
      }
    }
  }
}

TEST_P(GpuCodecTest, FusedReductionsMatchTheCpuBitwise) {
  const auto [dtype, bits, block, rotate, stochastic] = GetParam();
  const Format format{bits, block, rotate};
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const size_t count = 2 * 4096 + 77;
  const size_t piece_bytes = PieceBytes(count, dtype, format);
  std::vector<PieceBuffer> cpu_pieces;
  std::vector<std::unique_ptr<DeviceBuffer>> device_pieces;
  std::vector<std::span<const std::byte>> cpu_spans;
  std::vector<std::span<const std::byte>> device_spans;
  for (int j = 0; j < 5; ++j) {
    const HostTensor input = RandomTensor(dtype, count, 0, seed + j);
    cpu_pieces.emplace_back(piece_bytes);
    ASSERT_EQ(Quantize(input.View(), format, {}, cpu_pieces.back().Span()), ncclSuccess);
    device_pieces.push_back(
        std::make_unique<DeviceBuffer>(cpu_pieces.back().ConstSpan().data(), piece_bytes));
  }
  for (auto& piece : cpu_pieces) cpu_spans.push_back(piece.ConstSpan());
  for (auto& piece : device_pieces) device_spans.push_back(piece->ConstSpan());

  for (const size_t k : {size_t{1}, size_t{2}, size_t{5}}) {
    const std::span<const std::span<const std::byte>> cpu_k(cpu_spans.data(), k);
    const std::span<const std::span<const std::byte>> device_k(device_spans.data(), k);
    const float factor = 1.0f / static_cast<float>(k);
    for (const ncclDataType_t output_dtype : kDtypes) {
      HostTensor cpu_output(output_dtype, count);
      cpu_output.Poison();
      ASSERT_EQ(DequantizeReduce(cpu_k, count, format, factor, cpu_output.MutableView()),
                ncclSuccess);
      DeviceBuffer device_output(count * ElementSize(output_dtype));
      ASSERT_EQ(gpu::DequantizeReduce(device_k, count, format, factor,
                                      {device_output.data(), output_dtype, count}, stream_),
                ncclSuccess);
      ASSERT_EQ(FirstDifference(device_output.ToHost(), Allocation(cpu_output, 0)), -1)
          << "k " << k << " " << DtypeName(output_dtype);
    }
    Rounding rounding;
    rounding.stochastic = stochastic;
    rounding.seed = seed;
    // Every output width: qgZ requantizes its intra-node sums at the inter-node bits (8 -> 4,
    // 8 -> 2), with another block size and rotation when the width differs.
    for (const int out_bits : {8, 4, 3, 2}) {
      const Format out_format =
          out_bits == bits ? format : Format{out_bits, 4096 / block * 32, !rotate};
      const size_t out_bytes = PieceBytes(count, ncclFloat32, out_format);
      PieceBuffer cpu_out(out_bytes);
      ASSERT_EQ(DequantizeReduceRequantize(cpu_k, count, format, factor, out_format, rounding,
                                           cpu_out.Span()),
                ncclSuccess);
      DeviceBuffer device_out(out_bytes);
      ASSERT_EQ(gpu::DequantizeReduceRequantize(device_k, count, format, factor, out_format,
                                                rounding, device_out.Span(), stream_),
                ncclSuccess);
      ASSERT_EQ(FirstDifference(device_out.ToHost(), cpu_out.ConstSpan()), -1)
          << "k " << k << " requantized to int" << out_format.bits << " block " << out_format.block;
    }
  }
}

std::string ComboName(const ::testing::TestParamInfo<Combo>& combo) {
  const auto [dtype, bits, block, rotate, stochastic] = combo.param;
  return std::string(DtypeName(dtype)) + "_int" + std::to_string(bits) + "_block" +
         std::to_string(block) + (rotate ? "_rotated" : "") + (stochastic ? "_sr" : "");
}

INSTANTIATE_TEST_SUITE_P(AllFormats, GpuCodecTest,
                         ::testing::Combine(::testing::ValuesIn(kDtypes),
                                            ::testing::Values(8, 4, 3, 2),
                                            ::testing::Values(32, 256, 4096), ::testing::Bool(),
                                            ::testing::Bool()),
                         ComboName);

class GpuCodecMiscTest : public WithGpuStream<::testing::Test> {};

// 300 pieces (more than one launch's batch) placed in a shuffled order.
TEST_F(GpuCodecMiscTest, ManyPiecesLandWhereTold) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Format format{4, 64, true};
  const size_t count = 1000;
  const size_t pieces = 300;
  const size_t piece_bytes = PieceBytes(count, ncclBfloat16, format);
  PieceBuffer all(piece_bytes * pieces);
  for (size_t p = 0; p < pieces; ++p) {
    const HostTensor input = RandomTensor(ncclBfloat16, count, 0, seed + p);
    ASSERT_EQ(Quantize(input.View(), format, {}, all.Span().subspan(p * piece_bytes, piece_bytes)),
              ncclSuccess);
  }
  DeviceBuffer device_all(all.ConstSpan().data(), all.size());
  std::vector<size_t> order(pieces);
  for (size_t p = 0; p < pieces; ++p) order[p] = p;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  std::vector<PlacedPiece> cpu_placed;
  std::vector<PlacedPiece> device_placed;
  for (size_t p = 0; p < pieces; ++p) {
    cpu_placed.push_back({all.ConstSpan().subspan(p * piece_bytes, piece_bytes), order[p] * count});
    device_placed.push_back(
        {device_all.ConstSpan().subspan(p * piece_bytes, piece_bytes), order[p] * count});
  }
  HostTensor cpu_output(ncclBfloat16, pieces * count);
  cpu_output.Poison();
  ASSERT_EQ(Dequantize(cpu_placed, count, format, cpu_output.MutableView()), ncclSuccess);
  DeviceBuffer device_output(pieces * count * 2);
  ASSERT_EQ(gpu::Dequantize(device_placed, count, format,
                            {device_output.data(), ncclBfloat16, pieces * count}, stream_),
            ncclSuccess);
  ASSERT_EQ(FirstDifference(device_output.ToHost(), Allocation(cpu_output, 0)), -1);
}

TEST_F(GpuCodecMiscTest, FingerprintMatchesTheCpu) {
  const uint64_t seed = FreshSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 generator(seed);
  std::vector<std::byte> host(5000003);
  for (std::byte& byte : host) byte = static_cast<std::byte>(generator());
  DeviceBuffer device(host.data(), host.size());
  DeviceBuffer result(sizeof(uint64_t));
  for (const size_t start : {size_t{0}, size_t{3}, size_t{16}}) {
    for (const size_t length : {size_t{0}, size_t{7}, size_t{4096}, host.size() - 16}) {
      uint64_t expected = 0;
      ASSERT_EQ(Fingerprint({host.data() + start, length}, &expected), ncclSuccess);
      ASSERT_EQ(gpu::Fingerprint({device.data() + start, length},
                                 reinterpret_cast<uint64_t*>(result.data()), stream_),
                ncclSuccess);
      uint64_t actual = 0;
      std::memcpy(&actual, result.ToHost().data(), sizeof actual);
      EXPECT_EQ(actual, expected) << "start " << start << " length " << length;
    }
  }
  // Constant buffers (bf16 ones: bit 0 clear), and one element off at the end of a partial last
  // word or in a later block's words (bit 0 set by that block's warp alone).
  std::vector<std::byte> ones(2 * 1000003);
  for (size_t i = 0; i < ones.size(); i += 2) {
    ones[i] = std::byte{0x80};
    ones[i + 1] = std::byte{0x3f};
  }
  for (const size_t off : {size_t{0}, ones.size() - 1, size_t{1} << 20}) {
    if (off != 0) ones[off] ^= std::byte{1};
    for (const size_t length : {size_t{6}, size_t{4098}, ones.size()}) {
      DeviceBuffer constant(ones.data(), length);
      uint64_t expected = 0;
      ASSERT_EQ(Fingerprint({ones.data(), length}, &expected), ncclSuccess);
      ASSERT_EQ(gpu::Fingerprint({constant.data(), length},
                                 reinterpret_cast<uint64_t*>(result.data()), stream_),
                ncclSuccess);
      uint64_t actual = 0;
      std::memcpy(&actual, result.ToHost().data(), sizeof actual);
      EXPECT_EQ(actual, expected) << "ones, one off at " << off << ", length " << length;
    }
    if (off != 0) ones[off] ^= std::byte{1};
  }
}

// The launchers validate as the CPU codec does: a bad call enqueues nothing and says why.
TEST(GpuCodecArgsTest, BadArgumentsAreRejectedWithoutADevice) {
  const std::byte* unaligned = reinterpret_cast<const std::byte*>(uintptr_t{8});
  EXPECT_EQ(gpu::Quantize({nullptr, ncclFloat32, 10}, {}, {}, {}, nullptr), ncclInvalidArgument);
  EXPECT_EQ(gpu::Quantize({unaligned, ncclFloat32, 0}, {5, 256, false}, {}, {}, nullptr),
            ncclInvalidArgument);
  std::vector<std::span<const std::byte>> too_many(gpu::kMaxReducePieces + 1);
  EXPECT_EQ(gpu::DequantizeReduce(too_many, 0, {}, 1.0f, {nullptr, ncclFloat32, 0}, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(gpu::Fingerprint({}, nullptr, nullptr), ncclInvalidArgument);
}

}  // namespace
}  // namespace zpp::codec::testing
