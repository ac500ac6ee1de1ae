// The fused dequantize-reduce on the CPU: per run of elements, decode every piece and sum in
// piece order in fp32, scale, then either narrow to a tensor or encode as a new piece.
#include <algorithm>
#include <array>
#include <bit>
#include <string>

#include "codec/block_codec.h"
#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/validate.h"
#include "kernels/math/codec_math.h"

namespace zpp::codec {
namespace {

using Pieces = std::span<const std::span<const std::byte>>;

Result CheckInputs(const char* api, Pieces pieces, size_t count, const Format& format,
                   float scale_after_sum) {
  ZPP_CHECK(CheckFormat(api, ncclFloat32, format));
  ZPP_CHECK(CheckCount(api, count));
  ZPP_CHECK(CheckReduction(api, pieces.size(), scale_after_sum));
  const uint64_t piece = PieceLayout::Of(count, format).TotalBytes();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string name = "pieces[" + std::to_string(i) + "]";
    ZPP_CHECK(CheckPiece(api, name.c_str(), pieces[i].data(), pieces[i].size(), piece));
  }
  return ncclSuccess;
}

// sum[0, n) = (decode_0 + decode_1 + ... + decode_k-1) * scale_after_sum for elements
// [first, first + n), the sum started from the first piece's value (not from 0, which would
// turn -0 into +0) and taken in piece order.
void SumRun(Pieces pieces, const PieceLayout& layout, const Format& format, uint64_t first,
            size_t n, float scale_after_sum, float* sum) {
  std::array<float, kMaxRun> term;
  DecodeRun(pieces[0].data(), layout, format, first, n, sum);
  for (size_t j = 1; j < pieces.size(); ++j) {
    DecodeRun(pieces[j].data(), layout, format, first, n, term.data());
    for (size_t i = 0; i < n; ++i) sum[i] = sum[i] + term[i];
  }
  for (size_t i = 0; i < n; ++i) sum[i] = sum[i] * scale_after_sum;
}

}  // namespace

Result CheckDequantizeReduce(const char* api, Pieces pieces, size_t count, const Format& format,
                             float scale_after_sum, TensorView output) {
  ZPP_CHECK(CheckInputs(api, pieces, count, format, scale_after_sum));
  ZPP_CHECK(CheckTensor(api, "output", output.data, output.dtype, output.count));
  ZPP_CHECK_ARG(output.count == count, "%s: output has %zu elements, the pieces %zu" ZPP_BUG_REPORT,
                api, output.count, count);
  return ncclSuccess;
}

Result CheckDequantizeReduceRequantize(const char* api, Pieces pieces, size_t count,
                                       const Format& format, float scale_after_sum,
                                       const Format& out_format,
                                       std::span<const std::byte> out_piece) {
  ZPP_CHECK(CheckInputs(api, pieces, count, format, scale_after_sum));
  ZPP_CHECK(CheckFormat(api, ncclFloat32, out_format));
  return CheckPiece(api, "out_piece", out_piece.data(), out_piece.size(),
                    PieceLayout::Of(count, out_format).TotalBytes());
}

Result DequantizeReduce(Pieces pieces, size_t count, const Format& format, float scale_after_sum,
                        TensorView output) {
  ZPP_CHECK(CheckDequantizeReduce("codec::DequantizeReduce", pieces, count, format, scale_after_sum,
                                  output));
  const PieceLayout layout = PieceLayout::Of(count, format);

  const size_t block = static_cast<size_t>(format.block);
  std::array<float, kMaxRun> sum;
  for (uint64_t first = 0; first < count; first += block) {
    const size_t n = std::min<uint64_t>(block, count - first);
    SumRun(pieces, layout, format, first, n, scale_after_sum, sum.data());
    if (format.rotate) RotateRunsInverse(sum.data(), n, block);
    StoreElements(output.data, output.dtype, first, n, sum.data());
  }
  return ncclSuccess;
}

Result DequantizeReduceRequantize(Pieces pieces, size_t count, const Format& format,
                                  float scale_after_sum, const Format& out_format,
                                  const Rounding& rounding, std::span<std::byte> out_piece) {
  ZPP_CHECK(CheckDequantizeReduceRequantize("codec::DequantizeReduceRequantize", pieces, count,
                                            format, scale_after_sum, out_format, out_piece));
  const PieceLayout layout = PieceLayout::Of(count, format);
  const PieceLayout out_layout = PieceLayout::Of(count, out_format);

  const uint64_t stream_key = StreamKey(rounding.seed, rounding.rank, rounding.epoch);
  // A run of whole blocks of both formats (powers of two: the larger is a multiple of both).
  const size_t run = static_cast<size_t>(std::max(format.block, out_format.block));
  std::array<float, kMaxRun> sum;
  for (uint64_t first = 0; first < count; first += run) {
    const size_t n = std::min<uint64_t>(run, count - first);
    SumRun(pieces, layout, format, first, n, scale_after_sum, sum.data());
    ChangeRotatedDomain(sum.data(), first, n, count, format, out_format);
    EncodeRun(sum.data(), first, n, out_format, rounding, stream_key, out_layout, out_piece.data());
  }
  ZeroPadding(out_piece.data(), out_layout, out_format.bits);
  return ncclSuccess;
}

Result DequantizeReduceRequantizeFeedback(Pieces pieces, size_t count, const Format& format,
                                          float scale_after_sum, const Format& out_format,
                                          const Rounding& rounding, std::span<std::byte> out_piece,
                                          const Feedback& feedback) {
  constexpr const char* kApi = "codec::DequantizeReduceRequantizeFeedback";
  ZPP_CHECK(CheckInputs(kApi, pieces, count, format, scale_after_sum));
  ZPP_CHECK(CheckFormat(kApi, ncclFloat32, out_format));
  ZPP_CHECK(CheckFormat(kApi, ncclFloat32, feedback.format));
  // The residual is added where the sum is requantized: in one domain, so no rotation anywhere.
  ZPP_CHECK_ARG(!format.rotate && !out_format.rotate && !feedback.format.rotate,
                "%s: error feedback takes unrotated formats" ZPP_BUG_REPORT, kApi);
  const PieceLayout layout = PieceLayout::Of(count, format);
  const PieceLayout out_layout = PieceLayout::Of(count, out_format);
  const PieceLayout residual_layout = PieceLayout::Of(count, feedback.format);
  ZPP_CHECK(
      CheckPiece(kApi, "out_piece", out_piece.data(), out_piece.size(), out_layout.TotalBytes()));
  ZPP_CHECK(CheckPiece(kApi, "residual", feedback.residual.data(), feedback.residual.size(),
                       residual_layout.TotalBytes()));

  const uint64_t stream_key = StreamKey(rounding.seed, rounding.rank, rounding.epoch);
  const size_t run =
      static_cast<size_t>(std::max({format.block, out_format.block, feedback.format.block}));
  std::array<float, kMaxRun> sum;
  std::array<float, kMaxRun> other;
  for (uint64_t first = 0; first < count; first += run) {
    const size_t n = std::min<uint64_t>(run, count - first);
    SumRun(pieces, layout, format, first, n, scale_after_sum, sum.data());
    if (feedback.valid) {  // what the same call's last requantization lost
      DecodeRun(feedback.residual.data(), residual_layout, feedback.format, first, n, other.data());
      for (size_t i = 0; i < n; ++i) sum[i] = sum[i] + other[i];
    }
    EncodeRun(sum.data(), first, n, out_format, rounding, stream_key, out_layout, out_piece.data());
    DecodeRun(out_piece.data(), out_layout, out_format, first, n, other.data());
    // This requantization's loss, 0 where not finite (branch-free: the loop vectorizes).
    for (size_t i = 0; i < n; ++i) {
      const uint32_t loss = std::bit_cast<uint32_t>(sum[i] - other[i]);
      other[i] = std::bit_cast<float>(loss & FiniteMask(loss));
    }
    EncodeRun(other.data(), first, n, feedback.format, Rounding{}, 0, residual_layout,
              feedback.residual.data());
  }
  ZeroPadding(out_piece.data(), out_layout, out_format.bits);
  ZeroPadding(feedback.residual.data(), residual_layout, feedback.format.bits);
  return ncclSuccess;
}

}  // namespace zpp::codec
