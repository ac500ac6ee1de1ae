// Dequantize on the CPU: each piece block by block, decode, rotate back, narrow to the output.
#include <algorithm>
#include <array>
#include <string>

#include "codec/block_codec.h"
#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/validate.h"

namespace zpp::codec {

Result CheckDequantize(const char* api, std::span<const PlacedPiece> pieces, size_t count,
                       const Format& format, TensorView output) {
  ZPP_CHECK(CheckFormat(api, output.dtype, format));
  ZPP_CHECK(CheckTensor(api, "output", output.data, output.dtype, output.count));
  ZPP_CHECK(CheckCount(api, count));
  const uint64_t piece = PieceLayout::Of(count, format).TotalBytes();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string name = "pieces[" + std::to_string(i) + "]";
    ZPP_CHECK(CheckPiece(api, name.c_str(), pieces[i].bytes.data(), pieces[i].bytes.size(), piece));
    ZPP_CHECK(CheckPlacement(api, i, pieces[i].output_offset, count, output.count));
  }
  return ncclSuccess;
}

Result Dequantize(std::span<const PlacedPiece> pieces, size_t count, const Format& format,
                  TensorView output) {
  ZPP_CHECK(CheckDequantize("codec::Dequantize", pieces, count, format, output));
  const PieceLayout layout = PieceLayout::Of(count, format);

  const size_t block = static_cast<size_t>(format.block);
  std::array<float, kMaxRun> values;
  for (const PlacedPiece& piece : pieces) {
    for (uint64_t first = 0; first < count; first += block) {
      const size_t n = std::min<uint64_t>(block, count - first);
      DecodeRun(piece.bytes.data(), layout, format, first, n, values.data());
      if (format.rotate) RotateRunsInverse(values.data(), n, block);
      StoreElements(output.data, output.dtype, piece.output_offset + first, n, values.data());
    }
  }
  return ncclSuccess;
}

}  // namespace zpp::codec
