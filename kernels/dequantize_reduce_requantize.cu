// The fused dequantize-reduce-requantize (qgZ's middle step): a 2-D grid, x over the chunks of
// a sum and y over the sums of a batch; each thread sums its chunk over the sum's k pieces,
// changes domain only if the two formats differ in rotation, and encodes the sum with the lanes
// of its output block into the sum's output piece.
#include "kernels/codec_kernels.h"
#include "kernels/device/rotation.cuh"
#include "kernels/device/sum_chunk.cuh"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/reduce_launch.h"

namespace zpp::codec::gpu {
namespace {

template <int kInBits, int kOutBits, typename Pieces>
__global__ void __launch_bounds__(device::kMaxLanesPerBlock)
    DequantizeReduceRequantizeKernel(Pieces pieces, uint32_t items, int k,
                                     device::PieceGeometry geometry, bool rotate,
                                     float scale_after_sum, device::PieceGeometry out_geometry,
                                     bool out_rotate, device::RoundingStream rounding,
                                     uint8_t* __restrict__ out_pieces) {
  __shared__ uint32_t warp_max[device::kMaxWarpsPerCta];
  const uint64_t first = device::ChunkFirstElement();
  const uint64_t out_piece = out_geometry.scale_bytes + out_geometry.payload_bytes;
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    if (item != blockIdx.y) __syncthreads();  // the last item's block max is read by all
    float sum[device::kChunk];
    device::SumChunk<kInBits>(pieces, item, k, geometry, first, scale_after_sum, sum);
    device::ChangeRotatedDomain(sum, first, geometry, rotate, out_geometry, out_rotate);
    device::RoundingStream mine = rounding;
    mine.first_block += static_cast<uint64_t>(item) * out_geometry.blocks;
    device::EncodeChunk<kOutBits>(sum, first, out_geometry, mine, out_pieces + item * out_piece,
                                  warp_max);
  }
}

// The same, with error feedback (codec/codec.h's Feedback, ZPP_QGZ_EF): the residual of item i
// (an int8 piece in the output's block size, unrotated) is added to the sum before it is
// requantized, and this requantization's loss (0 where not finite) is encoded in its place. The
// sum's own output piece is read back for the loss: its scale was written by another lane, so a
// barrier first; and another before the residual's block max reuses warp_max.
template <int kInBits, int kOutBits>
__global__ void __launch_bounds__(device::kMaxLanesPerBlock)
    DequantizeReduceRequantizeFeedbackKernel(device::StridedPieces pieces, uint32_t items, int k,
                                             device::PieceGeometry geometry,
                                             device::PieceGeometry out_geometry,
                                             device::RoundingStream rounding,
                                             uint8_t* __restrict__ out_pieces,
                                             device::PieceGeometry residual_geometry,
                                             bool residual_valid, uint8_t* __restrict__ residuals) {
  __shared__ uint32_t warp_max[device::kMaxWarpsPerCta];
  const uint64_t first = device::ChunkFirstElement();
  const bool inside = first < geometry.count;
  const uint64_t out_piece = out_geometry.scale_bytes + out_geometry.payload_bytes;
  const uint64_t residual_piece = residual_geometry.scale_bytes + residual_geometry.payload_bytes;
  const device::RoundingStream nearest{false, 0, 0};
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    if (item != blockIdx.y) __syncthreads();  // the last item's block max is read by all
    uint8_t* const residual = residuals + item * residual_piece;
    uint8_t* const out = out_pieces + item * out_piece;
    float sum[device::kChunk];
    device::SumChunk<kInBits>(pieces, item, k, geometry, first, 1.0f, sum);
    if (residual_valid && inside) {  // what the same call's last requantization lost
      float kept[device::kChunk];
      device::DecodeChunk<8>(residual, residual_geometry, first, kept);
#pragma unroll
      for (int i = 0; i < device::kChunk; ++i) sum[i] = sum[i] + kept[i];
    }
    device::RoundingStream mine = rounding;
    mine.first_block += static_cast<uint64_t>(item) * out_geometry.blocks;
    device::EncodeChunk<kOutBits>(sum, first, out_geometry, mine, out, warp_max);
    __syncthreads();  // the block's scale, written by its first lane
    float loss[device::kChunk] = {};
    if (inside) {
      float decoded[device::kChunk];
      device::DecodeChunk<kOutBits>(out, out_geometry, first, decoded);
#pragma unroll
      for (int i = 0; i < device::kChunk; ++i) {
        const float value = sum[i] - decoded[i];
        loss[i] = isfinite(value) ? value : 0.0f;
      }
    }
    __syncthreads();  // warp_max again
    device::EncodeChunk<8>(loss, first, residual_geometry, nearest, residual, warp_max);
  }
}

template <typename Pieces>
cudaError_t Launch(const Pieces& pieces, uint32_t items, int k, size_t count, const Format& format,
                   float scale_after_sum, const Format& out_format, const Rounding& rounding,
                   std::byte* out_pieces, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  const device::PieceGeometry out_geometry = detail::GeometryOf(count, out_format);
  const int threads = detail::ThreadsFor(out_format.block);
  const dim3 grid(detail::GridFor(count, threads), detail::RowsFor(items));
  const device::RoundingStream stream_of_bits = detail::StreamOf(rounding);
  auto* out = reinterpret_cast<uint8_t*>(out_pieces);
  detail::WithBitsPair(format.bits, out_format.bits, [&]<int kBits, int kOutBits>() {
    DequantizeReduceRequantizeKernel<kBits, kOutBits>
        <<<grid, threads, 0, stream>>>(pieces, items, k, geometry, format.rotate, scale_after_sum,
                                       out_geometry, out_format.rotate, stream_of_bits, out);
  });
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchDequantizeReduceRequantize(std::span<const std::span<const std::byte>> pieces,
                                             size_t count, const Format& format,
                                             float scale_after_sum, const Format& out_format,
                                             const Rounding& rounding, std::byte* out_piece,
                                             cudaStream_t stream) {
  return Launch(detail::PackReducePieces(pieces), 1, static_cast<int>(pieces.size()), count, format,
                scale_after_sum, out_format, rounding, out_piece, stream);
}

cudaError_t LaunchDequantizeReduceRequantizeBatch(const std::byte* pieces, const ReduceBatch& batch,
                                                  size_t count, const Format& format,
                                                  float scale_after_sum, const Format& out_format,
                                                  const Rounding& rounding, std::byte* out_pieces,
                                                  cudaStream_t stream) {
  const device::StridedPieces strided{reinterpret_cast<const uint8_t*>(pieces), batch};
  return Launch(strided, batch.items, static_cast<int>(batch.terms), count, format, scale_after_sum,
                out_format, rounding, out_pieces, stream);
}

cudaError_t LaunchDequantizeReduceRequantizeFeedbackBatch(
    const std::byte* pieces, const ReduceBatch& batch, size_t count, const Format& format,
    const Format& out_format, const Rounding& rounding, std::byte* out_pieces,
    const Format& residual_format, bool residual_valid, std::byte* residuals, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  const device::PieceGeometry out_geometry = detail::GeometryOf(count, out_format);
  const device::PieceGeometry residual_geometry = detail::GeometryOf(count, residual_format);
  const device::StridedPieces strided{reinterpret_cast<const uint8_t*>(pieces), batch};
  const int threads = detail::ThreadsFor(out_format.block);
  const dim3 grid(detail::GridFor(count, threads), detail::RowsFor(batch.items));
  const device::RoundingStream stream_of_bits = detail::StreamOf(rounding);
  auto* out = reinterpret_cast<uint8_t*>(out_pieces);
  auto* kept = reinterpret_cast<uint8_t*>(residuals);
  detail::WithBitsPair(format.bits, out_format.bits, [&]<int kBits, int kOutBits>() {
    DequantizeReduceRequantizeFeedbackKernel<kBits, kOutBits><<<grid, threads, 0, stream>>>(
        strided, batch.items, static_cast<int>(batch.terms), geometry, out_geometry, stream_of_bits,
        out, residual_geometry, residual_valid, kept);
  });
  return cudaGetLastError();
}

namespace detail {
bool LoadDequantizeReduceRequantizeKernels() {
  bool ok = true;
  ForEveryBitsPair([&]<int kBits, int kOutBits>() {
    ok = LoadKernel(&DequantizeReduceRequantizeKernel<kBits, kOutBits, device::ReducePieces>) &&
         LoadKernel(&DequantizeReduceRequantizeKernel<kBits, kOutBits, device::StridedPieces>) &&
         LoadKernel(&DequantizeReduceRequantizeFeedbackKernel<kBits, kOutBits>) && ok;
  });
  return ok;
}
}  // namespace detail

}  // namespace zpp::codec::gpu
