// zpp-codec-sweep: the relative L2 error of the CPU codec for every block size, on Gaussian and
// Student-t (4 degrees of freedom) data, with the bits each element costs on the wire (payload
// plus its share of the fp32 scale). This is the measurement behind the default block size
// (docs/codecs.md). It prints a Markdown table, and exits 1 when a figure is not one a working
// codec gives (not finite, zero, or over the per-element bound of half a quantization step).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "codec/codec.h"

namespace {

using zpp::codec::Format;

std::vector<float> Sample(size_t count, bool heavy_tailed, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal;
  std::student_t_distribution<double> student(4.0);
  std::vector<float> values(count);
  for (float& value : values) {
    value = static_cast<float>(heavy_tailed ? student(generator) : normal(generator));
  }
  return values;
}

// 16-byte aligned piece storage.
struct Piece {
  explicit Piece(size_t bytes) : storage(bytes + 16) {
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    bytes_span = {storage.data() + (16 - address % 16) % 16, bytes};
  }
  std::vector<std::byte> storage;
  std::span<std::byte> bytes_span;
};

// The relative L2 a codec may reach at most: every element within half a step of its block,
// amax / (2 qmax), summed over the blocks. Not for rotated formats (their blocks are rotated).
double BoundL2(const std::vector<float>& input, const Format& format) {
  const double qmax = format.bits == 8 ? 127 : 7;
  double bound = 0, norm = 0;
  for (size_t start = 0; start < input.size(); start += format.block) {
    const size_t end = std::min(input.size(), start + static_cast<size_t>(format.block));
    double amax = 0;
    for (size_t i = start; i < end; ++i) {
      amax = std::max(amax, std::abs(static_cast<double>(input[i])));
      norm += static_cast<double>(input[i]) * input[i];
    }
    bound += (end - start) * (amax / (2 * qmax)) * (amax / (2 * qmax));
  }
  return std::sqrt(bound / norm) * (1 + 1e-6);
}

int failures = 0;

// The figure, checked: finite, above 0 (quantization always errs on these data) and inside the
// bound; otherwise one line on stderr and the program fails.
double Checked(double figure, const std::vector<float>& input, const Format& format,
               const char* column) {
  const bool ok =
      std::isfinite(figure) && figure > 0 && (format.rotate || figure <= BoundL2(input, format));
  if (!ok) {
    std::fprintf(stderr, "block %d, %s: relative L2 %g is not a working codec's\n", format.block,
                 column, figure);
    ++failures;
  }
  return figure;
}

double RelativeL2(const std::vector<float>& input, const Format& format) {
  const size_t count = input.size();
  Piece piece(zpp::codec::PieceBytes(count, ncclFloat32, format));
  std::vector<float> output(count);
  if (zpp::codec::Quantize({input.data(), ncclFloat32, count}, format, {}, piece.bytes_span) !=
      ncclSuccess) {
    return NAN;
  }
  const zpp::codec::PlacedPiece placed{piece.bytes_span, 0};
  if (zpp::codec::Dequantize({&placed, 1}, count, format, {output.data(), ncclFloat32, count}) !=
      ncclSuccess) {
    return NAN;
  }
  double error = 0;
  double norm = 0;
  for (size_t i = 0; i < count; ++i) {
    const double difference = static_cast<double>(input[i]) - output[i];
    error += difference * difference;
    norm += static_cast<double>(input[i]) * input[i];
  }
  return std::sqrt(error / norm);
}

double Figure(const std::vector<float>& input, const Format& format, const char* column) {
  return Checked(RelativeL2(input, format), input, format, column);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Relative L2 error of the zpp codec per block size (CPU)"};
  size_t count = size_t{1} << 20;
  app.add_option("--count", count, "values per distribution")->check(CLI::Range(1024, 1 << 28));
  CLI11_PARSE(app, argc, argv);

  const std::vector<float> gaussian = Sample(count, false, 1);
  const std::vector<float> student = Sample(count, true, 2);
  std::printf("%zu values per column, fp32 in and out, round to nearest even\n\n", count);
  std::printf(
      "| block | int8 bits/elem | Gaussian int8 | int4 bits/elem | Gaussian int4 | "
      "Student-t int4 | Student-t int4 rotated |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int block = 32; block <= 4096; block *= 2) {
    const double scale_bits = 32.0 / block;
    std::printf("| %d | %.3f | %.3f%% | %.3f | %.2f%% | %.2f%% | %.2f%% |\n", block, 8 + scale_bits,
                100 * Figure(gaussian, {8, block, false}, "Gaussian int8"), 4 + scale_bits,
                100 * Figure(gaussian, {4, block, false}, "Gaussian int4"),
                100 * Figure(student, {4, block, false}, "Student-t int4"),
                100 * Figure(student, {4, block, true}, "Student-t int4 rotated"));
  }
  return failures == 0 ? 0 : 1;
}
