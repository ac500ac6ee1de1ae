#include "codec/block_codec.h"

#include <algorithm>
#include <array>

#include "kernels/math/codec_math.h"

namespace zpp::codec {

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
    uint32_t amax_bits = 0;
    for (size_t i = 0; i < length; ++i) {
      amax_bits = std::max(amax_bits, FiniteMagnitudeBits(x[i]));
    }
    const float scale = BlockScale(amax_bits, qmax);
    const uint64_t block_index = (first + start) / block;
    const GridMap grid = GridMapOf(scale);
    if (rounding.stochastic) {
      const uint64_t key = BlockKey(stream_key, rounding.first_block + block_index);
      for (size_t i = 0; i < length; ++i) {
        q[i] = QuantizeStochastic(x[i], grid, qmax, ElementBits(key, static_cast<uint32_t>(i)));
      }
    } else {
      for (size_t i = 0; i < length; ++i) q[i] = QuantizeNearest(x[i], grid, qmax);
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
    const float scale = ReadScale(piece, (first + start) / block);
    for (size_t i = 0; i < length; ++i) {
      values[start + i] = DequantizeValue(q[start + i], scale, qmax);
    }
  }
}

}  // namespace zpp::codec
