// Reading and writing the regions of one piece (include/zpp/format.h) on the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/math/codec_params.h"

namespace zpp::codec {

struct PieceLayout {
  uint64_t count = 0;
  uint64_t blocks = 0;
  uint64_t scale_bytes = 0;    // the payload's offset
  uint64_t payload_bytes = 0;  // padding included

  static PieceLayout Of(uint64_t count, const Format& format);
  uint64_t TotalBytes() const { return scale_bytes + payload_bytes; }
};

float ReadScale(const std::byte* piece, uint64_t block);
void WriteScale(std::byte* piece, uint64_t block, float scale);

// The quantized values of elements [first, first + n) of the piece; `first` is a block start (a
// multiple of 32), and a last byte that n fills only in part keeps its other elements 0.
void WriteQuantized(std::byte* piece, const PieceLayout& layout, int bits, uint64_t first, size_t n,
                    const int* q);
void ReadQuantized(const std::byte* piece, const PieceLayout& layout, int bits, uint64_t first,
                   size_t n, int* q);

// Zeroes the padding after the last scale and after the last payload byte.
void ZeroPadding(std::byte* piece, const PieceLayout& layout, int bits);

}  // namespace zpp::codec
