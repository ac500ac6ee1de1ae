// The block-quantization codec on the CPU: the reference that defines every bit the CUDA kernels
// (kernels/codec_kernels.h) must reproduce, and the codec of the sim backend. The wire format is
// include/zpp/format.h. Every function returns ncclSuccess, or ncclInvalidArgument after one
// WARN saying what was wrong; nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/math/codec_params.h"
#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp::codec {

// Bytes of the piece holding `count` elements (zppPieceBytes; 0 for an invalid format).
uint64_t PieceBytes(size_t count, ncclDataType_t dtype, const Format& format);

// Encodes `input` into the first PieceBytes() bytes of `piece`, padding included.
Result Quantize(ConstTensorView input, const Format& format, const Rounding& rounding,
                std::span<std::byte> piece);

// Decodes pieces of `count` elements each into `output`, piece i at element
// pieces[i].output_offset (so a plan can reorder ranks while it decodes). The placed ranges must
// lie inside `output` and should not overlap.
Result Dequantize(std::span<const PlacedPiece> pieces, size_t count, const Format& format,
                  TensorView output);

// Sums k >= 1 pieces of `count` elements each in fp32, in piece order (qgZ's reduction), times
// `scale_after_sum` (1 for a sum, 1/n for an average), into `output` (output.count == count).
// The sum runs in the pieces' own domain (rotated or not); a rotated sum is rotated back once.
// A sum that overflows is +-Inf; a non-finite element in any piece gives NaN there.
Result DequantizeReduce(std::span<const std::span<const std::byte>> pieces, size_t count,
                        const Format& format, float scale_after_sum, TensorView output);

// The same sum, requantized as a new piece in `out_format` (qgZ's middle step), rotating or
// unrotating only when the two formats differ in that; an element whose sum is not finite is
// marked non-finite (format.h).
// Error feedback of one requantized sum (ZPP_QGZ_EF): `residual` is a piece in `format` (int8,
// unrotated) holding what the same call's last requantization lost; `valid` false reads it as
// zero. The op adds it to the sum before requantizing and writes this requantization's loss back
// (a loss that is not finite is kept as zero: one overflowed step must not poison the rest).
struct Feedback {
  Format format;
  bool valid = false;
  std::span<std::byte> residual;
};

Result DequantizeReduceRequantizeFeedback(std::span<const std::span<const std::byte>> pieces,
                                          size_t count, const Format& format, float scale_after_sum,
                                          const Format& out_format, const Rounding& rounding,
                                          std::span<std::byte> out_piece, const Feedback& feedback);

Result DequantizeReduceRequantize(std::span<const std::span<const std::byte>> pieces, size_t count,
                                  const Format& format, float scale_after_sum,
                                  const Format& out_format, const Rounding& rounding,
                                  std::span<std::byte> out_piece);

// The list forms' argument checks (ncclSuccess, or one WARN and ncclInvalidArgument), shared
// with the GPU codec (src/codec_gpu/codec_gpu.h) so that both reject a call alike.
Result CheckDequantize(const char* api, std::span<const PlacedPiece> pieces, size_t count,
                       const Format& format, TensorView output);
Result CheckDequantizeReduce(const char* api, std::span<const std::span<const std::byte>> pieces,
                             size_t count, const Format& format, float scale_after_sum,
                             TensorView output);
Result CheckDequantizeReduceRequantize(const char* api,
                                       std::span<const std::span<const std::byte>> pieces,
                                       size_t count, const Format& format, float scale_after_sum,
                                       const Format& out_format,
                                       std::span<const std::byte> out_piece);

// The 64-bit fingerprint of a buffer (kernels/math/fingerprint_math.h).
Result Fingerprint(std::span<const std::byte> bytes, uint64_t* fingerprint);

}  // namespace zpp::codec
