// fp64 references for the codec tests, written from include/zpp/format.h and the IEEE formats
// without any of the codec's code: conversions of fp16/bf16 by formula, a piece decoder that
// reads scales and integers by the documented layout and applies the rotation as a matrix.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/math/codec_params.h"
#include "kernels/math/views.h"

namespace zpp::codec::testing {

// The exact value of an fp16 / bf16 bit pattern (NaN for NaN patterns).
double RefHalfToDouble(uint16_t bits);
double RefBf16ToDouble(uint16_t bits);
// The nearest fp16 / bf16 to `value`, ties to even, overflow to Inf (value is not NaN).
uint16_t RefDoubleToHalf(double value);
uint16_t RefDoubleToBf16(double value);

inline size_t ElementSize(ncclDataType_t dtype) { return dtype == ncclFloat32 ? 4 : 2; }
const char* DtypeName(ncclDataType_t dtype);

// A tensor of a codec dtype in host memory, starting `offset` elements into a 64-byte aligned
// allocation (so offset 1 gives an address that no vector load may use), read and written as
// exact doubles.
class HostTensor {
 public:
  HostTensor(ncclDataType_t dtype, size_t count, size_t offset = 0);
  // Moves keep the allocation (and so its alignment); copies would not.
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;
  ncclDataType_t dtype() const { return dtype_; }
  size_t count() const { return count_; }
  void Set(size_t i, double value);  // rounded to nearest even into the dtype
  double Get(size_t i) const;        // exact
  uint32_t Bits(size_t i) const;
  void SetBits(size_t i, uint32_t bits);
  void Fill(std::span<const double> values);
  std::vector<double> Values() const;
  void Poison();  // every byte 0xA5, so an element the codec did not write shows
  void* data() { return storage_.data() + shift_ + offset_ * ElementSize(dtype_); }
  const void* data() const { return storage_.data() + shift_ + offset_ * ElementSize(dtype_); }
  ConstTensorView View() const { return {data(), dtype_, count_}; }
  TensorView MutableView() { return {data(), dtype_, count_}; }

 private:
  ncclDataType_t dtype_;
  size_t count_;
  size_t offset_;
  std::vector<std::byte> storage_;  // over-allocated by 64 bytes
  size_t shift_;                    // storage_.data() + shift_ is 64-byte aligned
};

// A 16-byte aligned byte buffer for pieces.
class PieceBuffer {
 public:
  explicit PieceBuffer(size_t bytes);  // every byte 0xA5
  PieceBuffer(PieceBuffer&&) noexcept = default;
  PieceBuffer& operator=(PieceBuffer&&) noexcept = default;
  PieceBuffer(const PieceBuffer&) = delete;
  PieceBuffer& operator=(const PieceBuffer&) = delete;
  std::span<std::byte> Span() { return {data_, bytes_}; }
  std::span<const std::byte> ConstSpan() const { return {data_, bytes_}; }
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  std::vector<std::byte> storage_;
  std::byte* data_;
  size_t bytes_;
};

// What format.h says a piece holds: the scale of each block and each element's integer.
float RefScale(std::span<const std::byte> piece, size_t block_index);
int RefQuantized(std::span<const std::byte> piece, size_t count, const Format& format,
                 size_t element);
// The decoded piece in fp64: q * scale (NaN for the non-finite code), then H32 on each rotated
// 32-run if rotated.
std::vector<double> RefDecodePiece(std::span<const std::byte> piece, size_t count,
                                   const Format& format);
// H32 * (x / 32) on each 32-run that format.h rotates in a piece of values.size() elements in
// blocks of `block` (the encoder's domain), in fp64: every run, but none of the tail block when
// the piece ends inside a run.
std::vector<double> RefRotateForward(std::span<const double> values, size_t block);
// H32 * y on the same runs, in fp64.
std::vector<double> RefRotateInverse(std::span<const double> values, size_t block);

// Samples (fixed seeds: the tests are deterministic).
std::vector<double> Gaussian(size_t n, uint64_t seed);
std::vector<double> StudentT4(size_t n, uint64_t seed);
std::vector<double> Uniform(size_t n, double low, double high, uint64_t seed);

// sqrt(sum (x - y)^2 / sum x^2).
double RelativeL2(std::span<const double> exact, std::span<const double> approximate);

// Half the spacing of the dtype's values around |value|: the most rounding to nearest into
// it can move a value of that size (denormal spacing below the normal range).
double HalfUlp(ncclDataType_t dtype, double value);

}  // namespace zpp::codec::testing
