// The codec on the GPU as zpp calls it: each operation of the CPU codec (codec/codec.h,
// codec/batch.h, codec/weight_delta.h) with the same arguments plus a stream, views holding
// device memory. Each call checks its arguments with the CPU codec's own checks (the same
// ncclInvalidArgument and one WARN), then enqueues the kernels' launcher (kernels/
// codec_kernels.h); a CUDA error there is one WARN and ncclUnhandledCudaError. Nothing
// allocates, synchronizes or calls back, so every call captures; the output is bitwise the CPU
// codec's (tests/codec/gpu_*). See docs/architecture.md, "Layers".
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/codec_kernels.h"
#include "kernels/math/codec_params.h"
#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp::codec::gpu {

Result Quantize(ConstTensorView input, const Format& format, const Rounding& rounding,
                std::span<std::byte> piece, cudaStream_t stream);
Result Dequantize(std::span<const PlacedPiece> pieces, size_t count, const Format& format,
                  TensorView output, cudaStream_t stream);
// At most kMaxReducePieces pieces (kernels/codec_kernels.h).
Result DequantizeReduce(std::span<const std::span<const std::byte>> pieces, size_t count,
                        const Format& format, float scale_after_sum, TensorView output,
                        cudaStream_t stream);
Result DequantizeReduceRequantize(std::span<const std::span<const std::byte>> pieces, size_t count,
                                  const Format& format, float scale_after_sum,
                                  const Format& out_format, const Rounding& rounding,
                                  std::span<std::byte> out_piece, cudaStream_t stream);

// The batched codec: one kernel launch per call, whatever the number of items.
Result QuantizeBatch(ConstTensorView input, size_t count, const BatchMap& map, const Format& format,
                     const Rounding& rounding, std::span<std::byte> pieces, cudaStream_t stream);
Result DequantizeBatch(std::span<const std::byte> pieces, size_t count, const BatchMap& map,
                       const Format& format, TensorView output, cudaStream_t stream);
Result DequantizeReduceBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                             size_t count, const Format& format, float scale_after_sum,
                             TensorView output, cudaStream_t stream);
Result DequantizeReduceRequantizeBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                                       size_t count, const Format& format, float scale_after_sum,
                                       const Format& out_format, const Rounding& rounding,
                                       std::span<std::byte> out_pieces, cudaStream_t stream);
// The residual format int8 in the output's block size, every format unrotated.
Result DequantizeReduceRequantizeFeedbackBatch(std::span<const std::byte> pieces,
                                               const ReduceBatch& batch, size_t count,
                                               const Format& format, const Format& out_format,
                                               const Rounding& rounding,
                                               std::span<std::byte> out_pieces,
                                               const Format& residual_format, bool residual_valid,
                                               std::span<std::byte> residuals, cudaStream_t stream);
Result CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst, size_t bytes,
                 const BatchMap& map, cudaStream_t stream);

// Writes the fingerprint of `bytes` to *device_fingerprint (8 bytes of device memory).
Result Fingerprint(std::span<const std::byte> bytes, uint64_t* device_fingerprint,
                   cudaStream_t stream);
// As kernels/codec_kernels.h's LaunchFingerprintBatch.
Result FingerprintBatch(const std::byte* data, size_t bytes, uint32_t items, size_t item_stride,
                        std::byte* out, size_t out_stride, cudaStream_t stream);

// qwZ's weight deltas, two launches for any number of items; `failures` is host-visible.
Result EncodeDelta(ConstTensorView weights, ConstTensorView reference, const Format& format,
                   const Rounding& rounding, std::span<std::byte> message, cudaStream_t stream);
Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                       size_t count, const Format& format, TensorView reference,
                       std::span<std::byte> held, uint32_t* failures, cudaStream_t stream);

// ncclSuccess for cudaSuccess; otherwise one WARN naming `api` and ncclUnhandledCudaError.
Result CheckCuda(const char* api, cudaError_t error);

}  // namespace zpp::codec::gpu
