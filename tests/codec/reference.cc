#include "reference.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "zpp/format.h"

namespace zpp::codec::testing {
namespace {

// value = sign * m * 2^(exponent - mantissa_bits - bias) for normal encodings.
double DecodeBinary(uint32_t bits, int exponent_bits, int mantissa_bits) {
  const uint32_t sign = bits >> (exponent_bits + mantissa_bits);
  const uint32_t exponent = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1);
  const uint32_t mantissa = bits & ((1u << mantissa_bits) - 1);
  const int bias = (1 << (exponent_bits - 1)) - 1;
  double magnitude;
  if (exponent == (1u << exponent_bits) - 1) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias - mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa + (1u << mantissa_bits)),
                           static_cast<int>(exponent) - bias - mantissa_bits);
  }
  return sign != 0 ? -magnitude : magnitude;
}

// Nearest encoding, ties to even: the spacing is 2^(e - mantissa_bits) in the binade of the
// value (the denormal spacing below the normal range); the integer multiple of the spacing is
// rounded with nearbyint (the default mode: to nearest even) and re-encoded.
uint32_t EncodeBinary(double value, int exponent_bits, int mantissa_bits) {
  const uint32_t sign = std::signbit(value) ? 1u << (exponent_bits + mantissa_bits) : 0u;
  const double magnitude = std::fabs(value);
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int min_exponent = 1 - bias;
  const uint32_t inf = ((1u << exponent_bits) - 1) << mantissa_bits;
  if (std::isinf(magnitude)) return sign | inf;
  if (magnitude == 0) return sign;
  int exponent = std::ilogb(magnitude);
  if (exponent < min_exponent) exponent = min_exponent;
  const double spacing = std::ldexp(1.0, exponent - mantissa_bits);
  double multiple = std::nearbyint(magnitude / spacing);  // exact division by a power of two
  if (multiple >= std::ldexp(1.0, mantissa_bits + 1)) {   // rounded up into the next binade
    multiple /= 2;
    ++exponent;
  }
  if (exponent > bias) return sign | inf;
  if (multiple < std::ldexp(1.0, mantissa_bits)) {  // denormal (only at the lowest exponent)
    return sign | static_cast<uint32_t>(multiple);
  }
  const uint32_t biased = static_cast<uint32_t>(exponent + bias);
  return sign | (biased << mantissa_bits) |
         (static_cast<uint32_t>(multiple) - (1u << mantissa_bits));
}

}  // namespace

double RefHalfToDouble(uint16_t bits) { return DecodeBinary(bits, 5, 10); }
double RefBf16ToDouble(uint16_t bits) { return DecodeBinary(bits, 8, 7); }
uint16_t RefDoubleToHalf(double value) { return static_cast<uint16_t>(EncodeBinary(value, 5, 10)); }
uint16_t RefDoubleToBf16(double value) { return static_cast<uint16_t>(EncodeBinary(value, 8, 7)); }

const char* DtypeName(ncclDataType_t dtype) {
  return dtype == ncclFloat32 ? "fp32" : dtype == ncclFloat16 ? "fp16" : "bf16";
}

HostTensor::HostTensor(ncclDataType_t dtype, size_t count, size_t offset)
    : dtype_(dtype),
      count_(count),
      offset_(offset),
      storage_((count + offset) * ElementSize(dtype) + 64),
      shift_((64 - reinterpret_cast<uintptr_t>(storage_.data()) % 64) % 64) {}

void HostTensor::Set(size_t i, double value) {
  if (dtype_ == ncclFloat32) {
    SetBits(i, [&] {
      const float narrowed = static_cast<float>(value);
      uint32_t bits;
      std::memcpy(&bits, &narrowed, 4);
      return bits;
    }());
  } else {
    SetBits(i, dtype_ == ncclFloat16 ? RefDoubleToHalf(value) : RefDoubleToBf16(value));
  }
}

double HostTensor::Get(size_t i) const {
  const uint32_t bits = Bits(i);
  if (dtype_ == ncclFloat16) return RefHalfToDouble(static_cast<uint16_t>(bits));
  if (dtype_ == ncclBfloat16) return RefBf16ToDouble(static_cast<uint16_t>(bits));
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

uint32_t HostTensor::Bits(size_t i) const {
  const auto* bytes = static_cast<const std::byte*>(data()) + i * ElementSize(dtype_);
  if (dtype_ == ncclFloat32) {
    uint32_t bits;
    std::memcpy(&bits, bytes, 4);
    return bits;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes, 2);
  return bits;
}

void HostTensor::SetBits(size_t i, uint32_t bits) {
  auto* bytes = static_cast<std::byte*>(data()) + i * ElementSize(dtype_);
  if (dtype_ == ncclFloat32) {
    std::memcpy(bytes, &bits, 4);
  } else {
    const auto half = static_cast<uint16_t>(bits);
    std::memcpy(bytes, &half, 2);
  }
}

void HostTensor::Fill(std::span<const double> values) {
  for (size_t i = 0; i < count_ && i < values.size(); ++i) Set(i, values[i]);
}

std::vector<double> HostTensor::Values() const {
  std::vector<double> values(count_);
  for (size_t i = 0; i < count_; ++i) values[i] = Get(i);
  return values;
}

void HostTensor::Poison() { std::memset(data(), 0xA5, count_ * ElementSize(dtype_)); }

PieceBuffer::PieceBuffer(size_t bytes) : storage_(bytes + 16), bytes_(bytes) {
  const auto address = reinterpret_cast<uintptr_t>(storage_.data());
  data_ = storage_.data() + (16 - address % 16) % 16;
  std::memset(data_, 0xA5, bytes_);
}

float RefScale(std::span<const std::byte> piece, size_t block_index) {
  float scale;
  std::memcpy(&scale, piece.data() + 4 * block_index, 4);
  return scale;
}

int RefQuantized(std::span<const std::byte> piece, size_t count, const Format& format,
                 size_t element) {
  const size_t payload = zppPieceScaleBytes(count, format.block);
  if (format.bits == 8) {
    return static_cast<int8_t>(static_cast<uint8_t>(piece[payload + element]));
  }
  if (format.bits == 3) {
    // Bit 3 * element of the payload read as one little-endian bit string.
    int triple = 0;
    for (size_t b = 0; b < 3; ++b) {
      const size_t bit = 3 * element + b;
      triple |= ((static_cast<uint8_t>(piece[payload + bit / 8]) >> (bit % 8)) & 1) << b;
    }
    return triple >= 4 ? triple - 8 : triple;
  }
  if (format.bits == 2) {
    const auto byte = static_cast<uint8_t>(piece[payload + element / 4]);
    const int pair = (byte >> (2 * (element % 4))) & 0x3;
    return pair >= 2 ? pair - 4 : pair;
  }
  const auto byte = static_cast<uint8_t>(piece[payload + element / 2]);
  const int nibble = element % 2 == 0 ? (byte & 0xF) : (byte >> 4);
  return nibble >= 8 ? nibble - 16 : nibble;
}

namespace {

// Sylvester's H32: entry (i, j) is (-1)^popcount(i & j).
double Hadamard(size_t i, size_t j) { return __builtin_popcountll(i & j) % 2 == 0 ? 1.0 : -1.0; }

// format.h: every run of 32, except in the tail block when the piece ends inside a run (that
// block stays unrotated whole).
std::vector<double> MultiplyRuns(std::span<const double> values, size_t block, double factor) {
  std::vector<double> out(values.begin(), values.end());
  const size_t end = values.size() % 32 == 0 ? values.size() : values.size() / block * block;
  for (size_t run = 0; run + 32 <= end; run += 32) {
    for (size_t i = 0; i < 32; ++i) {
      double sum = 0;
      for (size_t j = 0; j < 32; ++j) sum += Hadamard(i, j) * values[run + j];
      out[run + i] = sum * factor;
    }
  }
  return out;
}

}  // namespace

std::vector<double> RefRotateForward(std::span<const double> values, size_t block) {
  return MultiplyRuns(values, block, 1.0 / 32);
}

std::vector<double> RefRotateInverse(std::span<const double> values, size_t block) {
  return MultiplyRuns(values, block, 1.0);
}

std::vector<double> RefDecodePiece(std::span<const std::byte> piece, size_t count,
                                   const Format& format) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) {
    const float scale = RefScale(piece, i / static_cast<size_t>(format.block));
    const int q = RefQuantized(piece, count, format, i);
    values[i] = q * static_cast<double>(scale);
    // format.h: the width's most negative code is a non-finite element.
    if (q == -(1 << (format.bits - 1))) values[i] = std::numeric_limits<double>::quiet_NaN();
  }
  return format.rotate ? RefRotateInverse(values, static_cast<size_t>(format.block)) : values;
}

std::vector<double> Gaussian(size_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(n);
  for (double& value : values) value = normal(generator);
  return values;
}

std::vector<double> StudentT4(size_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::student_t_distribution<double> student(4.0);
  std::vector<double> values(n);
  for (double& value : values) value = student(generator);
  return values;
}

std::vector<double> Uniform(size_t n, double low, double high, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> values(n);
  for (double& value : values) value = uniform(generator);
  return values;
}

double RelativeL2(std::span<const double> exact, std::span<const double> approximate) {
  double error = 0;
  double norm = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    const double difference = exact[i] - approximate[i];
    error += difference * difference;
    norm += exact[i] * exact[i];
  }
  return std::sqrt(error / norm);
}

double HalfUlp(ncclDataType_t dtype, double value) {
  const double magnitude = std::fabs(value);
  const int mantissa_bits = dtype == ncclFloat32 ? 23 : dtype == ncclFloat16 ? 10 : 7;
  const int min_exponent = dtype == ncclFloat16 ? -14 : -126;
  int exponent = magnitude > 0 ? std::ilogb(magnitude) : min_exponent;
  if (exponent < min_exponent) exponent = min_exponent;
  return std::ldexp(1.0, exponent - mantissa_bits - 1);
}

}  // namespace zpp::codec::testing
