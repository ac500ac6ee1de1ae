// The codec's CUDA kernels behind host-callable launchers, one per operation of the CPU codec
// (src/codec/codec.h, src/codec/batch.h), with the same arguments plus a stream. Views hold
// device memory.
//
// Invariants: every argument is one the checked API (src/codec_gpu/codec_gpu.h) has accepted,
// so a launcher neither checks nor logs; it enqueues its kernels on `stream` and returns the CUDA
// error of that (cudaSuccess, or the launch's or a runtime call's error). Nothing allocates,
// synchronizes or calls back to the host, so every launch can be captured in a CUDA graph. The
// output is bitwise the CPU codec's (tests/codec/gpu_*). Speed: tensors whose address (and, in a
// batch, each item's place) is 16-byte aligned move in 16-byte vectors; others element by element.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/math/codec_params.h"
#include "kernels/math/views.h"

namespace zpp::codec::gpu {

// Pieces one list-form DequantizeReduce* launch can sum (their addresses travel as kernel
// arguments). The batched forms have no limit: their places come by formula.
inline constexpr size_t kMaxReducePieces = 128;

// True when a CUDA device is there to run on; otherwise `reason` (if not null) says why. Any
// failure of cudaGetDeviceCount (no driver, no device) counts as "no device".
bool DeviceAvailable(std::string* reason);

// Batched forms: one launch whatever the number of items (a grid row per item, up to 65535 rows,
// each row looping past that).
cudaError_t LaunchQuantizeBatch(ConstTensorView input, size_t count, const BatchMap& map,
                                const Format& format, const Rounding& rounding, std::byte* pieces,
                                cudaStream_t stream);
cudaError_t LaunchDequantizeBatch(const std::byte* pieces, size_t count, const BatchMap& map,
                                  const Format& format, TensorView output, cudaStream_t stream);
// Launches of up to 128 pieces each, their places as kernel arguments.
cudaError_t LaunchDequantize(std::span<const PlacedPiece> pieces, size_t count,
                             const Format& format, TensorView output, cudaStream_t stream);
// At most kMaxReducePieces pieces.
cudaError_t LaunchDequantizeReduce(std::span<const std::span<const std::byte>> pieces, size_t count,
                                   const Format& format, float scale_after_sum, TensorView output,
                                   cudaStream_t stream);
cudaError_t LaunchDequantizeReduceBatch(const std::byte* pieces, const ReduceBatch& batch,
                                        size_t count, const Format& format, float scale_after_sum,
                                        TensorView output, cudaStream_t stream);
// At most kMaxReducePieces pieces.
cudaError_t LaunchDequantizeReduceRequantize(std::span<const std::span<const std::byte>> pieces,
                                             size_t count, const Format& format,
                                             float scale_after_sum, const Format& out_format,
                                             const Rounding& rounding, std::byte* out_piece,
                                             cudaStream_t stream);
cudaError_t LaunchDequantizeReduceRequantizeBatch(const std::byte* pieces, const ReduceBatch& batch,
                                                  size_t count, const Format& format,
                                                  float scale_after_sum, const Format& out_format,
                                                  const Rounding& rounding, std::byte* out_pieces,
                                                  cudaStream_t stream);
// Every format unrotated; the residual int8 in the output's block size.
cudaError_t LaunchDequantizeReduceRequantizeFeedbackBatch(
    const std::byte* pieces, const ReduceBatch& batch, size_t count, const Format& format,
    const Format& out_format, const Rounding& rounding, std::byte* out_pieces,
    const Format& residual_format, bool residual_valid, std::byte* residuals, cudaStream_t stream);
cudaError_t LaunchCopyBatch(const std::byte* src, std::byte* dst, size_t bytes, const BatchMap& map,
                            cudaStream_t stream);

// `items` buffers of `bytes` each, item i at data + i x item_stride: its fingerprint goes to the
// 8 bytes at out + i x out_stride (8-byte aligned device memory, zeroed here first).
cudaError_t LaunchFingerprintBatch(const std::byte* data, size_t bytes, uint32_t items,
                                   size_t item_stride, std::byte* out, size_t out_stride,
                                   cudaStream_t stream);

// qwZ's weight deltas (src/codec/weight_delta.h): EncodeDelta is one kernel and the reference's
// fingerprint into the trailer; ApplyDeltaBatch fingerprints every reference item into `held`
// (8 bytes an item) in one launch, then checks and applies every item in another.
cudaError_t LaunchEncodeDelta(ConstTensorView weights, ConstTensorView reference,
                              const Format& format, const Rounding& rounding, std::byte* message,
                              cudaStream_t stream);
cudaError_t LaunchApplyDeltaBatch(const std::byte* messages, size_t stride, uint32_t items,
                                  size_t count, const Format& format, TensorView reference,
                                  std::byte* held, uint32_t* failures, cudaStream_t stream);

}  // namespace zpp::codec::gpu
