// The codec on the GPU: host-callable launchers of the CUDA kernels, one per operation of the
// CPU codec (src/codec/codec.h), with the same arguments plus a stream. Views hold device memory.
// Each call validates as the CPU codec does (ncclInvalidArgument and one WARN), enqueues its
// kernels on `stream` and returns; nothing allocates, synchronizes or calls back to the host,
// so every call can be captured in a CUDA graph. A failed launch returns ncclUnhandledCudaError.
// The output is bitwise equal to the CPU codec's for the same inputs (tests/codec/gpu_*).
//
// Speed: tensors whose address (and, in a batch, each item's place) is 16-byte aligned are read
// and written with 16-byte vectors; others go element by element, item by item.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/math/codec_params.h"
#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp::codec::gpu {

// Pieces one list-form DequantizeReduce* call can sum (their addresses travel as kernel
// arguments). The batched forms below have no limit: their places come by formula.
inline constexpr size_t kMaxReducePieces = 128;

// True when a CUDA device is there to run on; otherwise `reason` (if not null) says why. Any
// failure of cudaGetDeviceCount (no driver, no device) counts as "no device".
bool DeviceAvailable(std::string* reason);

Result Quantize(ConstTensorView input, const Format& format, const Rounding& rounding,
                std::span<std::byte> piece, cudaStream_t stream);

Result Dequantize(std::span<const PlacedPiece> pieces, size_t count, const Format& format,
                  TensorView output, cudaStream_t stream);

Result DequantizeReduce(std::span<const std::span<const std::byte>> pieces, size_t count,
                        const Format& format, float scale_after_sum, TensorView output,
                        cudaStream_t stream);

Result DequantizeReduceRequantize(std::span<const std::span<const std::byte>> pieces, size_t count,
                                  const Format& format, float scale_after_sum,
                                  const Format& out_format, const Rounding& rounding,
                                  std::span<std::byte> out_piece, cudaStream_t stream);

// The batched codec (codec/batch.h, the CPU reference): one kernel launch per call, whatever
// the number of items (a grid row per item, up to 65535 rows, each row looping past that).
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
// codec/batch.h's DequantizeReduceRequantizeFeedbackBatch (ZPP_QGZ_EF), bit for bit; the
// residual format must be int8 in the output's block size, every format unrotated.
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
// One launch for `items` buffers of `bytes` each, item i at data + i x item_stride: its
// fingerprint goes to the 8 bytes at out + i x out_stride (8-byte aligned, device memory).
Result FingerprintBatch(const std::byte* data, size_t bytes, uint32_t items, size_t item_stride,
                        std::byte* out, size_t out_stride, cudaStream_t stream);

// qwZ's weight deltas (codec/weight_delta.h), bit for bit: EncodeDelta is one kernel and the
// reference's fingerprint; ApplyDeltaBatch fingerprints every reference item into `held` (8
// bytes per item, device memory) in one launch, then checks and applies every item in another:
// two launches for any number of nodes. `failures` is host-visible.
Result EncodeDelta(ConstTensorView weights, ConstTensorView reference, const Format& format,
                   const Rounding& rounding, std::span<std::byte> message, cudaStream_t stream);
Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                       size_t count, const Format& format, TensorView reference,
                       std::span<std::byte> held, uint32_t* failures, cudaStream_t stream);

}  // namespace zpp::codec::gpu
