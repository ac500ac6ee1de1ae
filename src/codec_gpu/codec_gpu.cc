#include "codec_gpu/codec_gpu.h"

#include "codec/batch.h"
#include "codec/codec.h"

namespace zpp::codec::gpu {
namespace {

// The list forms' pieces travel as kernel arguments: at most kMaxReducePieces in one call.
Result CheckListLength(const char* api, size_t pieces) {
  ZPP_CHECK_ARG(pieces <= kMaxReducePieces,
                "%s: %zu pieces, at most %zu in one call" ZPP_BUG_REPORT, api, pieces,
                kMaxReducePieces);
  return ncclSuccess;
}

}  // namespace

Result CheckCuda(const char* api, cudaError_t error) {
  if (error == cudaSuccess) return ncclSuccess;
  (void)cudaGetLastError();  // reported here: not again by the next call's check
  ZPP_WARN(
      "%s: %s; the call fails with ncclUnhandledCudaError (a CUDA error, often an earlier "
      "kernel's: CUDA_LAUNCH_BLOCKING=1 shows which)",
      api, cudaGetErrorString(error));
  return ncclUnhandledCudaError;
}

Result QuantizeBatch(ConstTensorView input, size_t count, const BatchMap& map, const Format& format,
                     const Rounding& rounding, std::span<std::byte> pieces, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::QuantizeBatch";
  ZPP_CHECK(CheckQuantizeBatch(kApi, input, count, map, format, pieces));
  return CheckCuda(kApi,
                   LaunchQuantizeBatch(input, count, map, format, rounding, pieces.data(), stream));
}

Result Quantize(ConstTensorView input, const Format& format, const Rounding& rounding,
                std::span<std::byte> piece, cudaStream_t stream) {
  return QuantizeBatch(input, input.count, BatchMap{}, format, rounding, piece, stream);
}

Result DequantizeBatch(std::span<const std::byte> pieces, size_t count, const BatchMap& map,
                       const Format& format, TensorView output, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeBatch";
  ZPP_CHECK(CheckDequantizeBatch(kApi, pieces, count, map, format, output));
  return CheckCuda(kApi, LaunchDequantizeBatch(pieces.data(), count, map, format, output, stream));
}

Result Dequantize(std::span<const PlacedPiece> pieces, size_t count, const Format& format,
                  TensorView output, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::Dequantize";
  ZPP_CHECK(CheckDequantize(kApi, pieces, count, format, output));
  return CheckCuda(kApi, LaunchDequantize(pieces, count, format, output, stream));
}

Result DequantizeReduce(std::span<const std::span<const std::byte>> pieces, size_t count,
                        const Format& format, float scale_after_sum, TensorView output,
                        cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeReduce";
  ZPP_CHECK(CheckDequantizeReduce(kApi, pieces, count, format, scale_after_sum, output));
  ZPP_CHECK(CheckListLength(kApi, pieces.size()));
  return CheckCuda(kApi,
                   LaunchDequantizeReduce(pieces, count, format, scale_after_sum, output, stream));
}

Result DequantizeReduceBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                             size_t count, const Format& format, float scale_after_sum,
                             TensorView output, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeReduceBatch";
  ZPP_CHECK(CheckReduceBatchInto(kApi, pieces, batch, count, format, scale_after_sum, output));
  return CheckCuda(kApi, LaunchDequantizeReduceBatch(pieces.data(), batch, count, format,
                                                     scale_after_sum, output, stream));
}

Result DequantizeReduceRequantize(std::span<const std::span<const std::byte>> pieces, size_t count,
                                  const Format& format, float scale_after_sum,
                                  const Format& out_format, const Rounding& rounding,
                                  std::span<std::byte> out_piece, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeReduceRequantize";
  ZPP_CHECK(CheckDequantizeReduceRequantize(kApi, pieces, count, format, scale_after_sum,
                                            out_format, out_piece));
  ZPP_CHECK(CheckListLength(kApi, pieces.size()));
  return CheckCuda(
      kApi, LaunchDequantizeReduceRequantize(pieces, count, format, scale_after_sum, out_format,
                                             rounding, out_piece.data(), stream));
}

Result DequantizeReduceRequantizeBatch(std::span<const std::byte> pieces, const ReduceBatch& batch,
                                       size_t count, const Format& format, float scale_after_sum,
                                       const Format& out_format, const Rounding& rounding,
                                       std::span<std::byte> out_pieces, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeReduceRequantizeBatch";
  ZPP_CHECK(CheckRequantizeBatch(kApi, pieces, batch, count, format, scale_after_sum, out_format,
                                 out_pieces));
  return CheckCuda(kApi, LaunchDequantizeReduceRequantizeBatch(
                             pieces.data(), batch, count, format, scale_after_sum, out_format,
                             rounding, out_pieces.data(), stream));
}

Result DequantizeReduceRequantizeFeedbackBatch(
    std::span<const std::byte> pieces, const ReduceBatch& batch, size_t count, const Format& format,
    const Format& out_format, const Rounding& rounding, std::span<std::byte> out_pieces,
    const Format& residual_format, bool residual_valid, std::span<std::byte> residuals,
    cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeReduceRequantizeFeedbackBatch";
  ZPP_CHECK(CheckFeedbackBatch(kApi, pieces, batch, count, format, out_format, out_pieces,
                               residual_format, residuals));
  // The feedback kernel's own limits: one domain, and one thread block encodes a block of the
  // output and of the residual alike.
  ZPP_CHECK_ARG(!format.rotate && !out_format.rotate && !residual_format.rotate,
                "%s: error feedback takes unrotated formats" ZPP_BUG_REPORT, kApi);
  ZPP_CHECK_ARG(
      residual_format.bits == 8 && residual_format.block == out_format.block,
      "%s: the residual is int8 in the output's block size (bits %d, block %d)" ZPP_BUG_REPORT,
      kApi, residual_format.bits, residual_format.block);
  return CheckCuda(kApi,
                   LaunchDequantizeReduceRequantizeFeedbackBatch(
                       pieces.data(), batch, count, format, out_format, rounding, out_pieces.data(),
                       residual_format, residual_valid, residuals.data(), stream));
}

Result CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst, size_t bytes,
                 const BatchMap& map, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::CopyBatch";
  ZPP_CHECK(CheckCopyBatch(kApi, src, dst, bytes, map));
  return CheckCuda(kApi, LaunchCopyBatch(src.data(), dst.data(), bytes, map, stream));
}

}  // namespace zpp::codec::gpu
