#include "codec/piece_io.h"

#include <bit>
#include <cstring>

#include "kernels/math/codec_math.h"
#include "zpp/format.h"

namespace zpp::codec {

static_assert(std::endian::native == std::endian::little, "format.h is little-endian");

PieceLayout PieceLayout::Of(uint64_t count, const Format& format) {
  PieceLayout layout;
  layout.count = count;
  layout.blocks = zppPieceBlocks(count, format.block);
  layout.scale_bytes = zppPieceScaleBytes(count, format.block);
  layout.payload_bytes = zppPiecePayloadBytes(count, format.bits);
  return layout;
}

float ReadScale(const std::byte* piece, uint64_t block) {
  float scale;
  std::memcpy(&scale, piece + 4 * block, sizeof scale);
  return scale;
}

void WriteScale(std::byte* piece, uint64_t block, float scale) {
  std::memcpy(piece + 4 * block, &scale, sizeof scale);
}

void WriteQuantized(std::byte* piece, const PieceLayout& layout, int bits, uint64_t first, size_t n,
                    const int* q) {
  std::byte* payload = piece + layout.scale_bytes;
  if (bits == 8) {
    for (size_t i = 0; i < n; ++i) payload[first + i] = static_cast<std::byte>(q[i] & 0xFF);
    return;
  }
  if (bits == 3) {
    std::byte* group = payload + 3 * (first / 8);  // first is a multiple of 8
    for (size_t i = 0; i < n; i += 8, group += 3) {
      int eight[8];
      for (size_t j = 0; j < 8; ++j) eight[j] = i + j < n ? q[i + j] : 0;
      const uint32_t word = PackInt3Group(eight);
      for (int b = 0; b < 3; ++b) group[b] = static_cast<std::byte>((word >> (8 * b)) & 0xFFu);
    }
    return;
  }
  if (bits == 2) {
    for (size_t i = 0; i < n; i += 4) {
      const auto at = [&](size_t j) { return i + j < n ? q[i + j] : 0; };
      payload[(first + i) / 4] = static_cast<std::byte>(PackInt2Quad(at(0), at(1), at(2), at(3)));
    }
    return;
  }
  std::byte* bytes = payload + first / 2;  // first is even
  const size_t pairs = n / 2;
  for (size_t p = 0; p < pairs; ++p) {  // whole pairs without a branch: it vectorizes
    bytes[p] = static_cast<std::byte>(PackInt4Pair(q[2 * p], q[2 * p + 1]));
  }
  if (n % 2 != 0) bytes[pairs] = static_cast<std::byte>(PackInt4Pair(q[n - 1], 0));
}

void ReadQuantized(const std::byte* piece, const PieceLayout& layout, int bits, uint64_t first,
                   size_t n, int* q) {
  const std::byte* payload = piece + layout.scale_bytes;
  if (bits == 8) {
    for (size_t i = 0; i < n; ++i) q[i] = SignExtendInt8(static_cast<uint32_t>(payload[first + i]));
    return;
  }
  if (bits == 3) {
    const std::byte* groups = payload + 3 * (first / 8);  // first is a multiple of 8
    for (size_t i = 0; i < n; ++i) {
      const std::byte* group = groups + 3 * (i / 8);
      const uint32_t word = static_cast<uint32_t>(group[0]) |
                            (static_cast<uint32_t>(group[1]) << 8) |
                            (static_cast<uint32_t>(group[2]) << 16);
      q[i] = SignExtendInt3(word >> (3 * (i % 8)));
    }
    return;
  }
  if (bits == 2) {
    const std::byte* bytes = payload + first / 4;  // first is a multiple of 4
    for (size_t i = 0; i < n; ++i) {
      q[i] = SignExtendInt2(static_cast<uint32_t>(bytes[i / 4]) >> (2 * (i % 4)));
    }
    return;
  }
  const std::byte* bytes = payload + first / 2;  // first is even
  for (size_t p = 0; p < n / 2; ++p) {
    const auto byte = static_cast<uint32_t>(bytes[p]);
    q[2 * p] = SignExtendInt4(byte);
    q[2 * p + 1] = SignExtendInt4(byte >> 4);
  }
  if (n % 2 != 0) q[n - 1] = SignExtendInt4(static_cast<uint32_t>(bytes[n / 2]));
}

void ZeroPadding(std::byte* piece, const PieceLayout& layout, int bits) {
  if (layout.count == 0) return;  // an empty piece has no bytes (and may be null)
  const uint64_t scales_end = 4 * layout.blocks;
  std::memset(piece + scales_end, 0, layout.scale_bytes - scales_end);
  const uint64_t payload_end = zppPiecePayloadUsed(layout.count, bits);
  std::memset(piece + layout.scale_bytes + payload_end, 0, layout.payload_bytes - payload_end);
}

}  // namespace zpp::codec
