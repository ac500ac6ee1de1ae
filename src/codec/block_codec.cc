#include "codec/block_codec.h"

#include <algorithm>
#include <array>
#include <bit>

#include "kernels/math/codec_math.h"

namespace zpp::codec {
namespace {

// The loops below are block_math.h's per-element functions written without branches, so that
// the compiler vectorizes them; VectorRunsTest holds them to those functions bit for bit.

// The max of FiniteMagnitudeBits over x[0, n): a finite magnitude's bits fit a signed int.
uint32_t FiniteAmaxBits(const float* x, size_t n) {
  int32_t amax = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]);
    const auto kept = static_cast<int32_t>(bits & 0x7FFFFFFFu & FiniteMask(bits));
    amax = amax > kept ? amax : kept;
  }
  return static_cast<uint32_t>(amax);
}

// QuantizeNearest of x[0, n): a non-finite x is taken as 0 through the arithmetic and marked at
// the end, and the clamp is on the rounded value, an integer in a float.
void QuantizeNearestRun(const float* x, size_t n, GridMap grid, int qmax, int* q) {
  const auto limit = static_cast<float>(qmax);
  const int marker = NonFiniteCode(qmax);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]);
    const uint32_t finite = FiniteMask(bits);
    float rounded = RoundHalfEven(ToGrid(std::bit_cast<float>(bits & finite), grid));
    rounded = rounded < -limit ? -limit : rounded;
    rounded = rounded > limit ? limit : rounded;
    const auto keep = static_cast<int32_t>(finite);
    q[i] = (static_cast<int>(rounded) & keep) | (marker & ~keep);
  }
}

// DequantizeValue of q[0, n) with one scale.
void DequantizeRun(const int* q, size_t n, float scale, int qmax, float* values) {
  const int marker = NonFiniteCode(qmax);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t nan = 0u - static_cast<uint32_t>(q[i] == marker);
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(q[i]) * scale);
    values[i] = std::bit_cast<float>((bits & ~nan) | (kCanonicalNaNBits & nan));
  }
}

}  // namespace

void RotateRunsForward(float* values, size_t n, size_t block) {
  const size_t end = static_cast<size_t>(RotatedEnd(n, static_cast<uint64_t>(block)));
  for (size_t run = 0; run + kRotationPoints <= end; run += kRotationPoints) {
    RotateForward32(values + run);
  }
}

void RotateRunsInverse(float* values, size_t n, size_t block) {
  const size_t end = static_cast<size_t>(RotatedEnd(n, static_cast<uint64_t>(block)));
  for (size_t run = 0; run + kRotationPoints <= end; run += kRotationPoints) {
    RotateInverse32(values + run);
  }
}

void ChangeRotatedDomain(float* values, uint64_t first, size_t n, uint64_t count,
                         const Format& from, const Format& to) {
  const auto end = [count](const Format& f) {
    return f.rotate ? RotatedEnd(count, static_cast<uint64_t>(f.block)) : 0;
  };
  const uint64_t from_end = end(from), to_end = end(to);
  if (from_end == to_end) return;
  for (size_t run = 0; run + kRotationPoints <= n; run += kRotationPoints) {
    const uint64_t last = first + run + kRotationPoints;
    const bool in = last <= from_end, out = last <= to_end;
    if (in && !out) RotateInverse32(values + run);
    if (!in && out) RotateForward32(values + run);
  }
}

void EncodeRun(const float* values, uint64_t first, size_t n, const Format& format,
               const Rounding& rounding, uint64_t stream_key, const PieceLayout& layout,
               std::byte* piece) {
  const int qmax = QMax(format.bits);
  const size_t block = static_cast<size_t>(format.block);
  std::array<int, kMaxRun> q;
  for (size_t start = 0; start < n; start += block) {
    const size_t length = std::min(block, n - start);
    const float* x = values + start;
    const float scale = BlockScale(FiniteAmaxBits(x, length), qmax);
    const uint64_t block_index = (first + start) / block;
    const GridMap grid = GridMapOf(scale);
    if (rounding.stochastic) {
      const uint64_t key = BlockKey(stream_key, rounding.first_block + block_index);
      for (size_t i = 0; i < length; ++i) {
        q[i] = QuantizeStochastic(x[i], grid, qmax, ElementBits(key, static_cast<uint32_t>(i)));
      }
    } else {
      QuantizeNearestRun(x, length, grid, qmax, q.data());
    }
    WriteScale(piece, block_index, scale);
    WriteQuantized(piece, layout, format.bits, first + start, length, q.data());
  }
}

void DecodeRun(const std::byte* piece, const PieceLayout& layout, const Format& format,
               uint64_t first, size_t n, float* values) {
  const size_t block = static_cast<size_t>(format.block);
  const int qmax = QMax(format.bits);
  std::array<int, kMaxRun> q;
  ReadQuantized(piece, layout, format.bits, first, n, q.data());
  for (size_t start = 0; start < n; start += block) {
    const size_t length = std::min(block, n - start);
    DequantizeRun(q.data() + start, length, ReadScale(piece, (first + start) / block), qmax,
                  values + start);
  }
}

}  // namespace zpp::codec
