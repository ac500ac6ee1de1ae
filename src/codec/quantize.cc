// Quantize on the CPU: block by block, widen to fp32, rotate, encode.
#include <algorithm>
#include <array>

#include "codec/block_codec.h"
#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/validate.h"
#include "kernels/math/codec_math.h"
#include "zpp/format.h"

namespace zpp::codec {

uint64_t PieceBytes(size_t count, ncclDataType_t dtype, const Format& format) {
  return zppPieceBytes(count, dtype, format.bits, format.block);
}

Result Quantize(ConstTensorView input, const Format& format, const Rounding& rounding,
                std::span<std::byte> piece) {
  constexpr const char* kApi = "codec::Quantize";
  ZPP_CHECK(CheckFormat(kApi, input.dtype, format));
  ZPP_CHECK(CheckTensor(kApi, "input", input.data, input.dtype, input.count));
  const PieceLayout layout = PieceLayout::Of(input.count, format);
  ZPP_CHECK(CheckPiece(kApi, "piece", piece.data(), piece.size(), layout.TotalBytes()));

  const uint64_t stream_key = StreamKey(rounding.seed, rounding.rank, rounding.epoch);
  const size_t block = static_cast<size_t>(format.block);
  std::array<float, kMaxRun> values;
  for (uint64_t first = 0; first < input.count; first += block) {
    const size_t n = std::min<uint64_t>(block, input.count - first);
    LoadElements(input.data, input.dtype, first, n, values.data());
    if (format.rotate) RotateRunsForward(values.data(), n, block);
    EncodeRun(values.data(), first, n, format, rounding, stream_key, layout, piece.data());
  }
  ZeroPadding(piece.data(), layout, format.bits);
  return ncclSuccess;
}

}  // namespace zpp::codec
