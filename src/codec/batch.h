// The codec's batched operations: one call runs many items, each exactly the item-level call of
// codec/codec.h, with the items placed by formula (BatchMap, ReduceBatch: kernels/
// codec_params.h) rather than by list, so that a batch of any size is one call, and one kernel
// on the GPU (kernels/codec_kernels.h), whatever the number of ranks, nodes or racks. These are
// the CPU reference of the batched kernels and the sim backend's codec; the checks are shared
// with the kernels' launchers, so both reject the same calls with the same WARN.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/math/codec_params.h"
#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp::codec {

// Item i encodes `count` elements of `input` from element From(i) into the piece at byte To(i)
// of `pieces`. Its stochastic rounding continues where item i-1's blocks end (first_block +
// i x blocks per piece), as if the items were one long tensor.
Result QuantizeBatch(ConstTensorView input, size_t count, const BatchMap& map, const Format& format,
                     const Rounding& rounding, std::span<std::byte> pieces);

// Item i decodes the piece at byte From(i) of `pieces` into `output` at element To(i).
Result DequantizeBatch(std::span<const std::byte> pieces, size_t count, const BatchMap& map,
                       const Format& format, TensorView output);

// Sum s of `batch` (DequantizeReduce of its terms) into elements s x count .. (s + 1) x count of
// `output`, which holds batch.items x count elements.
Result DequantizeReduceBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                             size_t count, const Format& format, float scale_after_sum,
                             TensorView output);

// Sum s of `batch` requantized in `out_format` into the piece at s x PieceBytes(count,
// out_format) of `out_pieces`; rounding continues from sum to sum as in QuantizeBatch.
Result DequantizeReduceRequantizeBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                                       size_t count, const Format& format, float scale_after_sum,
                                       const Format& out_format, const Rounding& rounding,
                                       std::span<std::byte> out_pieces);

// The same with error feedback (codec.h's Feedback): sum s uses and rewrites the residual piece
// at s x PieceBytes(count, residual_format) of `residuals`.
Result DequantizeReduceRequantizeFeedbackBatch(
    std::span<const std::byte> pieces, const ReduceBatch& batch, size_t count, const Format& format,
    const Format& out_format, const Rounding& rounding, std::span<std::byte> out_pieces,
    const Format& residual_format, bool residual_valid, std::span<std::byte> residuals);

// Item i copies `bytes` from byte From(i) of `src` to byte To(i) of `dst`.
Result CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst, size_t bytes,
                 const BatchMap& map);

// The rounding of item `item` of a batch of pieces of `count` elements.
Rounding ItemRounding(const Rounding& rounding, size_t count, const Format& format, uint64_t item);

// The argument checks of each batched operation (ncclSuccess, or one WARN and
// ncclInvalidArgument): formats, tensors, and every item inside its buffers.
Result CheckQuantizeBatch(const char* api, ConstTensorView input, size_t count, const BatchMap& map,
                          const Format& format, std::span<const std::byte> pieces);
Result CheckDequantizeBatch(const char* api, std::span<const std::byte> pieces, size_t count,
                            const BatchMap& map, const Format& format, TensorView output);
Result CheckReduceBatch(const char* api, std::span<const std::byte> pieces,
                        const ReduceBatch& batch, size_t count, const Format& format,
                        float scale_after_sum);
// CheckReduceBatch, and an output of every sum's `count` elements.
Result CheckReduceBatchInto(const char* api, std::span<const std::byte> pieces,
                            const ReduceBatch& batch, size_t count, const Format& format,
                            float scale_after_sum, TensorView output);
// CheckReduceBatch, and an output piece of every sum.
Result CheckRequantizeBatch(const char* api, std::span<const std::byte> pieces,
                            const ReduceBatch& batch, size_t count, const Format& format,
                            float scale_after_sum, const Format& out_format,
                            std::span<const std::byte> out_pieces);
// CheckRequantizeBatch at a factor of 1, and a residual piece of every sum.
Result CheckFeedbackBatch(const char* api, std::span<const std::byte> pieces,
                          const ReduceBatch& batch, size_t count, const Format& format,
                          const Format& out_format, std::span<const std::byte> out_pieces,
                          const Format& residual_format, std::span<const std::byte> residuals);
Result CheckCopyBatch(const char* api, std::span<const std::byte> src, std::span<std::byte> dst,
                      size_t bytes, const BatchMap& map);

}  // namespace zpp::codec
