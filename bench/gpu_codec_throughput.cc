// zpp-codec-gpu-bench: the CUDA kernels' throughput against a device-to-device copy measured in
// the same run on the same GPU, 256 MiB and 1 GiB tensors (64 MiB fit an H200's 60 MB L2 nearly
// whole: the first run's quantize beat the copy there), counting bytes read plus written
// (a copy of N bytes moves 2N). Medians of timed repeats (CUDA events). Prints a Markdown table
// and, with --out, writes it to a file (bench/results/). Exits 77 (ctest's "skipped") with the
// reason when there is no CUDA device.
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "kernels/codec_kernels.h"

namespace {

using zpp::codec::Format;

constexpr int kSkipped = 77;

#define BENCH_CUDA(call)                                                        \
  do {                                                                          \
    const cudaError_t bench_error = (call);                                     \
    if (bench_error != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(bench_error)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

#define BENCH_ZPP(call)                           \
  do {                                            \
    if ((call) != ncclSuccess) {                  \
      std::fprintf(stderr, "%s failed\n", #call); \
      std::exit(1);                               \
    }                                             \
  } while (0)

struct DeviceBytes {
  explicit DeviceBytes(size_t n) : size(n) {
    BENCH_CUDA(cudaMalloc(&data, n));
    BENCH_CUDA(cudaMemset(data, 0, n));
  }
  ~DeviceBytes() { cudaFree(data); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  std::span<std::byte> Span() { return {static_cast<std::byte*>(data), size}; }
  void* data = nullptr;
  size_t size;
};

// Median milliseconds of `repeats` runs of `body` on `stream`, after two warm-up runs.
double MedianMs(cudaStream_t stream, int repeats, const std::function<void()>& body) {
  cudaEvent_t start;
  cudaEvent_t stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 2; ++i) body();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    BENCH_CUDA(cudaEventRecord(start, stream));
    body();
    BENCH_CUDA(cudaEventRecord(stop, stream));
    BENCH_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  BENCH_CUDA(cudaEventDestroy(start));
  BENCH_CUDA(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Fills a tensor with values in [-1, 1) from a hash of the index, on the device.
void FillTensor(DeviceBytes& tensor, ncclDataType_t dtype, size_t count, cudaStream_t stream) {
  std::vector<float> host(count);
  uint32_t state = 12345;
  for (float& value : host) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<float>(state >> 8) * 0x1p-23f - 1.0f;
  }
  if (dtype == ncclFloat32) {
    BENCH_CUDA(
        cudaMemcpyAsync(tensor.data, host.data(), count * 4, cudaMemcpyHostToDevice, stream));
  } else {
    std::vector<uint16_t> narrow(count);
    for (size_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &host[i], 4);
      narrow[i] = static_cast<uint16_t>(bits >> 16);  // a bf16 (or fp16 bits; fine for speed)
    }
    BENCH_CUDA(
        cudaMemcpyAsync(tensor.data, narrow.data(), count * 2, cudaMemcpyHostToDevice, stream));
  }
  BENCH_CUDA(cudaStreamSynchronize(stream));
}

struct Row {
  std::string op;
  std::string dtype;
  std::string format;
  size_t tensor_mib;
  double ms;
  double gbps;
  double copy_gbps;
  double target;
};

std::string FormatName(const Format& format) {
  return "int" + std::to_string(format.bits) + "/" + std::to_string(format.block) +
         (format.rotate ? "/rot" : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zpp codec kernels against a device-to-device copy"};
  bool quick = false;
  int repeats = 20;
  std::string out_path;
  app.add_flag("--quick", quick, "64 MiB only, 3 repeats (a smoke run)");
  app.add_option("--repeats", repeats, "timed repeats per figure (median)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--out", out_path, "also write the table to this file");
  CLI11_PARSE(app, argc, argv);

  std::string reason;
  if (!zpp::codec::gpu::DeviceAvailable(&reason)) {
    std::printf("zpp-codec-gpu-bench: skipped, no CUDA device (%s)\n", reason.c_str());
    return kSkipped;
  }
  if (quick) repeats = 3;
  cudaDeviceProp properties{};
  BENCH_CUDA(cudaGetDeviceProperties(&properties, 0));
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreate(&stream));

  std::vector<size_t> sizes_mib = {256, 1024};
  if (quick) sizes_mib = {64};
  const ncclDataType_t dtypes[] = {ncclFloat32, ncclBfloat16};
  const Format formats[] = {{8, 256, false}, {4, 256, false}, {4, 256, true}};
  constexpr int kReducePieces = 4;
  std::vector<Row> rows;
  for (const size_t mib : sizes_mib) {
    const size_t bytes = mib << 20;
    for (const ncclDataType_t dtype : dtypes) {
      const char* dtype_name = dtype == ncclFloat32 ? "fp32" : "bf16";
      const size_t element = dtype == ncclFloat32 ? 4 : 2;
      const size_t count = bytes / element;
      DeviceBytes tensor(bytes);
      DeviceBytes copy(bytes);
      FillTensor(tensor, dtype, count, stream);
      const double copy_ms = MedianMs(stream, repeats, [&] {
        BENCH_CUDA(
            cudaMemcpyAsync(copy.data, tensor.data, bytes, cudaMemcpyDeviceToDevice, stream));
      });
      const double copy_gbps = 2.0 * bytes / copy_ms / 1e6;
      rows.push_back({"d2d copy", dtype_name, "-", mib, copy_ms, copy_gbps, copy_gbps, 1.0});
      for (const Format& format : formats) {
        const size_t piece_bytes = zpp::codec::PieceBytes(count, dtype, format);
        std::vector<std::unique_ptr<DeviceBytes>> pieces;
        for (int j = 0; j < kReducePieces; ++j)
          pieces.push_back(std::make_unique<DeviceBytes>(piece_bytes));
        const zpp::codec::ConstTensorView input{tensor.data, dtype, count};
        const auto add = [&](const char* op, double ms, size_t moved, double target) {
          rows.push_back(
              {op, dtype_name, FormatName(format), mib, ms, moved / ms / 1e6, copy_gbps, target});
        };
        add("quantize",
            MedianMs(stream, repeats,
                     [&] {
                       BENCH_ZPP(
                           zpp::codec::gpu::Quantize(input, format, {}, pieces[0]->Span(), stream));
                     }),
            bytes + piece_bytes, 0.85);
        for (int j = 1; j < kReducePieces; ++j) {
          BENCH_ZPP(zpp::codec::gpu::Quantize(input, format, {}, pieces[j]->Span(), stream));
        }
        const zpp::codec::PlacedPiece placed{pieces[0]->Span(), 0};
        add("dequantize",
            MedianMs(stream, repeats,
                     [&] {
                       BENCH_ZPP(zpp::codec::gpu::Dequantize({&placed, 1}, count, format,
                                                             {copy.data, dtype, count}, stream));
                     }),
            piece_bytes + bytes, 0.85);
        std::vector<std::span<const std::byte>> spans;
        for (auto& piece : pieces) spans.push_back(piece->Span());
        add("dequantize-reduce x4",
            MedianMs(stream, repeats,
                     [&] {
                       BENCH_ZPP(zpp::codec::gpu::DequantizeReduce(
                           spans, count, format, 0.25f, {copy.data, dtype, count}, stream));
                     }),
            kReducePieces * piece_bytes + bytes, 0.80);
        DeviceBytes requantized(piece_bytes);
        add("dequantize-reduce-requantize x4",
            MedianMs(stream, repeats,
                     [&] {
                       BENCH_ZPP(zpp::codec::gpu::DequantizeReduceRequantize(
                           spans, count, format, 0.25f, format, {}, requantized.Span(), stream));
                     }),
            (kReducePieces + 1) * piece_bytes, 0.80);
      }
      DeviceBytes fingerprint(sizeof(uint64_t));
      rows.push_back({"fingerprint", dtype_name, "-", mib, 0, 0, copy_gbps, 0});
      const double fingerprint_ms = MedianMs(stream, repeats, [&] {
        BENCH_ZPP(zpp::codec::gpu::Fingerprint(tensor.Span(),
                                               static_cast<uint64_t*>(fingerprint.data), stream));
      });
      rows.back().ms = fingerprint_ms;
      rows.back().gbps = bytes / fingerprint_ms / 1e6;
    }
  }

  std::ostringstream table;
  char line[512];
  std::snprintf(line, sizeof line, "GPU: %s (%d SMs), CUDA runtime, %d repeats, medians\n\n",
                properties.name, properties.multiProcessorCount, repeats);
  table << line;
  table << "| op | dtype | format | tensor MiB | ms | GB/s (read+write) | copy GB/s | ratio | "
           "target |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Row& row : rows) {
    const double ratio = row.gbps / row.copy_gbps;
    char target[32] = "-";
    if (row.target > 0) {
      std::snprintf(target, sizeof target, "%.2f %s", row.target,
                    ratio >= row.target ? "met" : "MISSED");
    }
    std::snprintf(line, sizeof line, "| %s | %s | %s | %zu | %.3f | %.0f | %.0f | %.2f | %s |\n",
                  row.op.c_str(), row.dtype.c_str(), row.format.c_str(), row.tensor_mib, row.ms,
                  row.gbps, row.copy_gbps, ratio, target);
    table << line;
  }
  std::fputs(table.str().c_str(), stdout);
  if (!out_path.empty()) std::ofstream(out_path) << table.str();
  BENCH_CUDA(cudaStreamDestroy(stream));
  return 0;
}
