// Google Benchmark of the CPU codec (the reference and the sim backend's codec). Throughput is
// bytes read plus bytes written per second, the measure the GPU kernels are held to as well.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "checked_reporter.h"
#include "codec/codec.h"
#include "kernels/math/codec_math.h"
#include "kernels/math/nccl_types.h"

namespace zpp::codec {
namespace {

constexpr size_t kCount = size_t{1} << 22;  // 16 MiB of fp32: past the caches

ncclDataType_t DtypeOf(int64_t index) {
  return index == 0 ? ncclFloat32 : index == 1 ? ncclFloat16 : ncclBfloat16;
}

// 16-byte aligned bytes (std::vector<std::byte> alone promises only operator new's alignment).
struct AlignedBytes {
  explicit AlignedBytes(size_t bytes) : storage(bytes + 16) {
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    data = storage.data() + (16 - address % 16) % 16;
    size = bytes;
  }
  std::span<std::byte> Span() { return {data, size}; }
  std::vector<std::byte> storage;
  std::byte* data;
  size_t size;
};

// Gaussian values in `dtype`.
AlignedBytes RandomTensor(ncclDataType_t dtype, size_t count, uint64_t seed) {
  AlignedBytes tensor(count * NcclTypeBytes(dtype));
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal;
  for (size_t i = 0; i < count; ++i) {
    const float value = normal(generator);
    if (dtype == ncclFloat32) {
      std::memcpy(tensor.data + 4 * i, &value, 4);
    } else {
      const uint16_t bits = dtype == ncclFloat16 ? FloatToHalf(value) : FloatToBf16(value);
      std::memcpy(tensor.data + 2 * i, &bits, 2);
    }
  }
  return tensor;
}

// Every call's result is checked (a codec that fails at once would time as very fast), and the
// work's output once after the loop: a run that errs is reported and fails the program.
bool Failed(benchmark::State& state, Result result) {
  if (result == ncclSuccess) return false;
  state.SkipWithError("the codec returned an error");
  return true;
}

// Relative L2 of a decoded tensor against the input it came from: Gaussian data at block 256
// err 0.70% (int8) and 12.6% (int4) (docs/codecs.md); above 1.5x that the codec is broken.
void CheckRoundTrip(benchmark::State& state, const AlignedBytes& input, const AlignedBytes& output,
                    ncclDataType_t dtype, int bits) {
  double error = 0, norm = 0;
  for (size_t i = 0; i < kCount; ++i) {
    float x = 0, y = 0;
    if (dtype == ncclFloat32) {
      std::memcpy(&x, input.data + 4 * i, 4);
      std::memcpy(&y, output.data + 4 * i, 4);
    } else {
      uint16_t a, b;
      std::memcpy(&a, input.data + 2 * i, 2);
      std::memcpy(&b, output.data + 2 * i, 2);
      x = dtype == ncclFloat16 ? HalfToFloat(a) : Bf16ToFloat(a);
      y = dtype == ncclFloat16 ? HalfToFloat(b) : Bf16ToFloat(b);
    }
    error += (double(x) - y) * (double(x) - y);
    norm += double(x) * x;
  }
  const double relative = std::sqrt(error / norm);
  const double limit = 1.5 * (bits == 8 ? 0.0070 : 0.126) + 0.004;  // + bf16's output rounding
  if (!(relative <= limit)) state.SkipWithError("decoded values off their inputs");
}

AlignedBytes QuantizedPiece(ncclDataType_t dtype, const Format& format, uint64_t seed) {
  AlignedBytes input = RandomTensor(dtype, kCount, seed);
  AlignedBytes piece(PieceBytes(kCount, dtype, format));
  (void)Quantize({input.data, dtype, kCount}, format, {}, piece.Span());
  return piece;
}

// Arguments: dtype (0 fp32, 1 fp16, 2 bf16), bits, rotate.
void BM_Quantize(benchmark::State& state) {
  const ncclDataType_t dtype = DtypeOf(state.range(0));
  const Format format{static_cast<int>(state.range(1)), kDefaultBlock, state.range(2) != 0};
  AlignedBytes input = RandomTensor(dtype, kCount, 1);
  AlignedBytes piece(PieceBytes(kCount, dtype, format));
  for (auto _ : state) {
    if (Failed(state, Quantize({input.data, dtype, kCount}, format, {}, piece.Span()))) return;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(input.size + piece.size));
  AlignedBytes output(kCount * NcclTypeBytes(dtype));
  const PlacedPiece placed{piece.Span(), 0};
  if (Failed(state, Dequantize({&placed, 1}, kCount, format, {output.data, dtype, kCount}))) return;
  CheckRoundTrip(state, input, output, dtype, format.bits);
}

void BM_Dequantize(benchmark::State& state) {
  const ncclDataType_t dtype = DtypeOf(state.range(0));
  const Format format{static_cast<int>(state.range(1)), kDefaultBlock, state.range(2) != 0};
  AlignedBytes input = RandomTensor(dtype, kCount, 2);
  AlignedBytes piece(PieceBytes(kCount, dtype, format));
  if (Failed(state, Quantize({input.data, dtype, kCount}, format, {}, piece.Span()))) return;
  AlignedBytes output(kCount * NcclTypeBytes(dtype));
  const PlacedPiece placed{piece.Span(), 0};
  for (auto _ : state) {
    if (Failed(state, Dequantize({&placed, 1}, kCount, format, {output.data, dtype, kCount}))) {
      return;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(piece.size + output.size));
  CheckRoundTrip(state, input, output, dtype, format.bits);
}

// Arguments: bits, rotate, pieces; the output is an fp32 tensor.
void BM_DequantizeReduce(benchmark::State& state) {
  const Format format{static_cast<int>(state.range(0)), kDefaultBlock, state.range(1) != 0};
  std::vector<AlignedBytes> pieces;
  std::vector<std::span<const std::byte>> spans;
  for (int64_t j = 0; j < state.range(2); ++j) {
    pieces.push_back(QuantizedPiece(ncclFloat32, format, 10 + static_cast<uint64_t>(j)));
  }
  for (AlignedBytes& piece : pieces) spans.push_back(piece.Span());
  AlignedBytes output(kCount * 4);
  for (auto _ : state) {
    if (Failed(state,
               DequantizeReduce(spans, kCount, format, 1.0f, {output.data, ncclFloat32, kCount}))) {
      return;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(pieces.size() * pieces[0].size + output.size));
}

// Arguments: bits, rotate, pieces; requantized to the same format.
void BM_DequantizeReduceRequantize(benchmark::State& state) {
  const Format format{static_cast<int>(state.range(0)), kDefaultBlock, state.range(1) != 0};
  std::vector<AlignedBytes> pieces;
  std::vector<std::span<const std::byte>> spans;
  for (int64_t j = 0; j < state.range(2); ++j) {
    pieces.push_back(QuantizedPiece(ncclFloat32, format, 20 + static_cast<uint64_t>(j)));
  }
  for (AlignedBytes& piece : pieces) spans.push_back(piece.Span());
  AlignedBytes out(pieces[0].size);
  for (auto _ : state) {
    if (Failed(state,
               DequantizeReduceRequantize(spans, kCount, format, 1.0f, format, {}, out.Span()))) {
      return;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>((pieces.size() + 1) * out.size));
}

// Arguments: bits in, bits out, pieces: the compressed all-reduce's feedback kernel (qar+ef), its
// int8 residual read and rewritten every call (bytes: the pieces, the output and the residual
// twice).
void BM_DequantizeReduceRequantizeFeedback(benchmark::State& state) {
  const Format in_format{static_cast<int>(state.range(0)), kDefaultBlock, false};
  const Format out_format{static_cast<int>(state.range(1)), kDefaultBlock, false};
  const Format residual_format{8, kDefaultBlock, false};
  std::vector<AlignedBytes> pieces;
  std::vector<std::span<const std::byte>> spans;
  for (int64_t j = 0; j < state.range(2); ++j) {
    pieces.push_back(QuantizedPiece(ncclFloat32, in_format, 30 + static_cast<uint64_t>(j)));
  }
  for (AlignedBytes& piece : pieces) spans.push_back(piece.Span());
  AlignedBytes out(PieceBytes(kCount, ncclFloat32, out_format));
  AlignedBytes residual(PieceBytes(kCount, ncclFloat32, residual_format));
  bool valid = false;  // the first call starts the residual
  for (auto _ : state) {
    const Feedback feedback{residual_format, valid, residual.Span()};
    if (Failed(state, DequantizeReduceRequantizeFeedback(spans, kCount, in_format, 1.0f, out_format,
                                                         {}, out.Span(), feedback))) {
      return;
    }
    valid = true;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(pieces.size() * pieces[0].size +
                                                                    out.size + 2 * residual.size));
}

void BM_Fingerprint(benchmark::State& state) {
  AlignedBytes bytes = RandomTensor(ncclFloat32, kCount, 3);
  uint64_t fingerprint = 0;
  for (auto _ : state) {
    if (Failed(state, Fingerprint(bytes.Span(), &fingerprint))) return;
    benchmark::DoNotOptimize(fingerprint);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes.size));
}

BENCHMARK(BM_Quantize)
    ->ArgNames({"dtype", "bits", "rotate"})
    ->ArgsProduct({{0, 1, 2}, {8, 4}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Dequantize)
    ->ArgNames({"dtype", "bits", "rotate"})
    ->ArgsProduct({{0, 1, 2}, {8, 4}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DequantizeReduce)
    ->ArgNames({"bits", "rotate", "pieces"})
    ->ArgsProduct({{8, 4}, {0, 1}, {4}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DequantizeReduceRequantize)
    ->ArgNames({"bits", "rotate", "pieces"})
    ->ArgsProduct({{8, 4}, {0, 1}, {4}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DequantizeReduceRequantizeFeedback)
    ->ArgNames({"bits_in", "bits_out", "pieces"})
    ->ArgsProduct({{8}, {8, 4}, {1, 2}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Fingerprint)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zpp::codec

int main(int argc, char** argv) { return zpp::bench::Main(argc, argv, /*goal_ns=*/0); }
