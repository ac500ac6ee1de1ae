// The batched codec on the CPU: each item through the item-level codec, in item order.
#include "codec/batch.h"

#include <cstring>
#include <vector>

#include "codec/codec.h"
#include "codec/validate.h"
#include "zpp/format.h"

namespace zpp::codec {
namespace {

// Every item's offset in a buffer whose items start 16-byte aligned: the strides are.
Result CheckAlignedStrides(const char* api, const char* name, const uint64_t (&strides)[3],
                           const uint32_t (&radix)[3]) {
  for (int k = 0; k < BatchMap::kDigits; ++k) {
    ZPP_CHECK_ARG(radix[k] <= 1 || strides[k] % ZPP_PIECE_ALIGN == 0,
                  "%s: %s stride %llu is not a multiple of %d bytes" ZPP_BUG_REPORT, api, name,
                  static_cast<unsigned long long>(strides[k]), ZPP_PIECE_ALIGN);
  }
  return ncclSuccess;
}

Result CheckRadix(const char* api, const BatchMap& map) {
  for (int k = 0; k < BatchMap::kDigits; ++k) {
    ZPP_CHECK_ARG(map.radix[k] >= 1, "%s: batch digit %d has radix 0" ZPP_BUG_REPORT, api, k);
  }
  ZPP_CHECK_ARG(map.items() <= UINT32_MAX,
                "%s: %llu items, at most 2^32 - 1 in one batch" ZPP_BUG_REPORT, api,
                static_cast<unsigned long long>(map.items()));
  return ncclSuccess;
}

}  // namespace

Rounding ItemRounding(const Rounding& rounding, size_t count, const Format& format, uint64_t item) {
  Rounding mine = rounding;
  mine.first_block += item * zppPieceBlocks(count, format.block);
  return mine;
}

Result CheckQuantizeBatch(const char* api, ConstTensorView input, size_t count, const BatchMap& map,
                          const Format& format, std::span<const std::byte> pieces) {
  ZPP_CHECK(CheckFormat(api, input.dtype, format));
  ZPP_CHECK(CheckTensor(api, "input", input.data, input.dtype, input.count));
  ZPP_CHECK(CheckCount(api, count));
  ZPP_CHECK(CheckRadix(api, map));
  const uint64_t piece = PieceBytes(count, input.dtype, format);
  ZPP_CHECK(CheckPiece(api, "pieces", pieces.data(), pieces.size(), piece + map.LastTo()));
  ZPP_CHECK(CheckAlignedStrides(api, "piece", map.to, map.radix));
  ZPP_CHECK_ARG(map.LastFrom() + count <= input.count,
                "%s: the last item reads elements up to %llu of an input of %zu" ZPP_BUG_REPORT,
                api, static_cast<unsigned long long>(map.LastFrom() + count), input.count);
  return ncclSuccess;
}

Result CheckDequantizeBatch(const char* api, std::span<const std::byte> pieces, size_t count,
                            const BatchMap& map, const Format& format, TensorView output) {
  ZPP_CHECK(CheckFormat(api, output.dtype, format));
  ZPP_CHECK(CheckTensor(api, "output", output.data, output.dtype, output.count));
  ZPP_CHECK(CheckCount(api, count));
  ZPP_CHECK(CheckRadix(api, map));
  const uint64_t piece = PieceBytes(count, output.dtype, format);
  ZPP_CHECK(CheckPiece(api, "pieces", pieces.data(), pieces.size(), piece + map.LastFrom()));
  ZPP_CHECK(CheckAlignedStrides(api, "piece", map.from, map.radix));
  ZPP_CHECK(CheckPlacement(api, map.items() - 1, map.LastTo(), count, output.count));
  return ncclSuccess;
}

Result CheckReduceBatch(const char* api, std::span<const std::byte> pieces,
                        const ReduceBatch& batch, size_t count, const Format& format,
                        float scale_after_sum) {
  ZPP_CHECK(CheckFormat(api, ncclFloat32, format));
  ZPP_CHECK(CheckCount(api, count));
  ZPP_CHECK(CheckReduction(api, batch.terms, scale_after_sum));
  ZPP_CHECK_ARG(batch.items >= 1, "%s: no sums in the batch" ZPP_BUG_REPORT, api);
  ZPP_CHECK_ARG((batch.items <= 1 || batch.item_stride % ZPP_PIECE_ALIGN == 0) &&
                    (batch.terms <= 1 || batch.term_stride % ZPP_PIECE_ALIGN == 0),
                "%s: strides %llu and %llu are not multiples of %d bytes" ZPP_BUG_REPORT, api,
                static_cast<unsigned long long>(batch.item_stride),
                static_cast<unsigned long long>(batch.term_stride), ZPP_PIECE_ALIGN);
  const uint64_t piece = PieceBytes(count, ncclFloat32, format);
  ZPP_CHECK(CheckPiece(api, "pieces", pieces.data(), pieces.size(), batch.Extent(piece)));
  return ncclSuccess;
}

Result CheckReduceBatchInto(const char* api, std::span<const std::byte> pieces,
                            const ReduceBatch& batch, size_t count, const Format& format,
                            float scale_after_sum, TensorView output) {
  ZPP_CHECK(CheckReduceBatch(api, pieces, batch, count, format, scale_after_sum));
  ZPP_CHECK(CheckTensor(api, "output", output.data, output.dtype, output.count));
  ZPP_CHECK_ARG(output.count == batch.items * count,
                "%s: output has %zu elements, %u sums of %zu need %llu" ZPP_BUG_REPORT, api,
                output.count, batch.items, count,
                static_cast<unsigned long long>(batch.items) * count);
  return ncclSuccess;
}

Result CheckRequantizeBatch(const char* api, std::span<const std::byte> pieces,
                            const ReduceBatch& batch, size_t count, const Format& format,
                            float scale_after_sum, const Format& out_format,
                            std::span<const std::byte> out_pieces) {
  ZPP_CHECK(CheckReduceBatch(api, pieces, batch, count, format, scale_after_sum));
  ZPP_CHECK(CheckFormat(api, ncclFloat32, out_format));
  return CheckPiece(api, "out_pieces", out_pieces.data(), out_pieces.size(),
                    PieceBytes(count, ncclFloat32, out_format) * batch.items);
}

Result CheckFeedbackBatch(const char* api, std::span<const std::byte> pieces,
                          const ReduceBatch& batch, size_t count, const Format& format,
                          const Format& out_format, std::span<const std::byte> out_pieces,
                          const Format& residual_format, std::span<const std::byte> residuals) {
  ZPP_CHECK(CheckReduceBatch(api, pieces, batch, count, format, 1.0f));
  ZPP_CHECK(CheckFormat(api, ncclFloat32, out_format));
  ZPP_CHECK(CheckFormat(api, ncclFloat32, residual_format));
  ZPP_CHECK(CheckPiece(api, "out_pieces", out_pieces.data(), out_pieces.size(),
                       PieceBytes(count, ncclFloat32, out_format) * batch.items));
  return CheckPiece(api, "residuals", residuals.data(), residuals.size(),
                    PieceBytes(count, ncclFloat32, residual_format) * batch.items);
}

Result CheckCopyBatch(const char* api, std::span<const std::byte> src, std::span<std::byte> dst,
                      size_t bytes, const BatchMap& map) {
  ZPP_CHECK(CheckRadix(api, map));
  ZPP_CHECK_ARG(bytes == 0 || (src.data() != nullptr && dst.data() != nullptr),
                "%s: a null buffer" ZPP_BUG_REPORT, api);
  ZPP_CHECK_ARG(
      map.LastFrom() + bytes <= src.size() && map.LastTo() + bytes <= dst.size(),
      "%s: items of %zu bytes overrun the source (%zu) or the destination (%zu)" ZPP_BUG_REPORT,
      api, bytes, src.size(), dst.size());
  return ncclSuccess;
}

Result QuantizeBatch(ConstTensorView input, size_t count, const BatchMap& map, const Format& format,
                     const Rounding& rounding, std::span<std::byte> pieces) {
  ZPP_CHECK(CheckQuantizeBatch("codec::QuantizeBatch", input, count, map, format, pieces));
  const size_t element = input.dtype == ncclFloat32 ? 4 : 2;
  const uint64_t piece = PieceBytes(count, input.dtype, format);
  for (uint64_t item = 0; item < map.items(); ++item) {
    uint64_t from = 0, to = 0;
    map.Place(item, &from, &to);
    const void* data = static_cast<const std::byte*>(input.data) + from * element;
    ZPP_CHECK(Quantize({data, input.dtype, count}, format,
                       ItemRounding(rounding, count, format, item), pieces.subspan(to, piece)));
  }
  return ncclSuccess;
}

Result DequantizeBatch(std::span<const std::byte> pieces, size_t count, const BatchMap& map,
                       const Format& format, TensorView output) {
  ZPP_CHECK(CheckDequantizeBatch("codec::DequantizeBatch", pieces, count, map, format, output));
  const uint64_t piece = PieceBytes(count, output.dtype, format);
  for (uint64_t item = 0; item < map.items(); ++item) {
    uint64_t from = 0, to = 0;
    map.Place(item, &from, &to);
    const PlacedPiece placed{pieces.subspan(from, piece), to};
    ZPP_CHECK(Dequantize({&placed, 1}, count, format, output));
  }
  return ncclSuccess;
}

namespace {

// The terms of sum `item`.
std::vector<std::span<const std::byte>> Terms(std::span<const std::byte> pieces,
                                              const ReduceBatch& batch, uint64_t item,
                                              uint64_t piece) {
  std::vector<std::span<const std::byte>> terms(batch.terms);
  for (uint32_t t = 0; t < batch.terms; ++t) {
    terms[t] = pieces.subspan(batch.Offset(item, t), piece);
  }
  return terms;
}

}  // namespace

Result DequantizeReduceBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                             size_t count, const Format& format, float scale_after_sum,
                             TensorView output) {
  constexpr const char* kApi = "codec::DequantizeReduceBatch";
  ZPP_CHECK(CheckReduceBatchInto(kApi, pieces, batch, count, format, scale_after_sum, output));
  const uint64_t piece = PieceBytes(count, ncclFloat32, format);
  const size_t element = output.dtype == ncclFloat32 ? 4 : 2;
  for (uint64_t item = 0; item < batch.items; ++item) {
    void* out = static_cast<std::byte*>(output.data) + item * count * element;
    ZPP_CHECK(DequantizeReduce(Terms(pieces, batch, item, piece), count, format, scale_after_sum,
                               {out, output.dtype, count}));
  }
  return ncclSuccess;
}

Result DequantizeReduceRequantizeBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                                       size_t count, const Format& format, float scale_after_sum,
                                       const Format& out_format, const Rounding& rounding,
                                       std::span<std::byte> out_pieces) {
  ZPP_CHECK(CheckRequantizeBatch("codec::DequantizeReduceRequantizeBatch", pieces, batch, count,
                                 format, scale_after_sum, out_format, out_pieces));
  const uint64_t piece = PieceBytes(count, ncclFloat32, format);
  const uint64_t out_piece = PieceBytes(count, ncclFloat32, out_format);
  for (uint64_t item = 0; item < batch.items; ++item) {
    ZPP_CHECK(DequantizeReduceRequantize(Terms(pieces, batch, item, piece), count, format,
                                         scale_after_sum, out_format,
                                         ItemRounding(rounding, count, out_format, item),
                                         out_pieces.subspan(item * out_piece, out_piece)));
  }
  return ncclSuccess;
}

Result DequantizeReduceRequantizeFeedbackBatch(
    std::span<const std::byte> pieces, const ReduceBatch& batch, size_t count, const Format& format,
    const Format& out_format, const Rounding& rounding, std::span<std::byte> out_pieces,
    const Format& residual_format, bool residual_valid, std::span<std::byte> residuals) {
  ZPP_CHECK(CheckFeedbackBatch("codec::DequantizeReduceRequantizeFeedbackBatch", pieces, batch,
                               count, format, out_format, out_pieces, residual_format, residuals));
  const uint64_t piece = PieceBytes(count, ncclFloat32, format);
  const uint64_t out_piece = PieceBytes(count, ncclFloat32, out_format);
  const uint64_t residual = PieceBytes(count, ncclFloat32, residual_format);
  for (uint64_t item = 0; item < batch.items; ++item) {
    const Feedback feedback{residual_format, residual_valid,
                            residuals.subspan(item * residual, residual)};
    ZPP_CHECK(DequantizeReduceRequantizeFeedback(
        Terms(pieces, batch, item, piece), count, format, 1.0f, out_format,
        ItemRounding(rounding, count, out_format, item),
        out_pieces.subspan(item * out_piece, out_piece), feedback));
  }
  return ncclSuccess;
}

Result CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst, size_t bytes,
                 const BatchMap& map) {
  ZPP_CHECK(CheckCopyBatch("codec::CopyBatch", src, dst, bytes, map));
  for (uint64_t item = 0; item < map.items(); ++item) {
    uint64_t from = 0, to = 0;
    map.Place(item, &from, &to);
    std::memmove(dst.data() + to, src.data() + from, bytes);
  }
  return ncclSuccess;
}

}  // namespace zpp::codec
