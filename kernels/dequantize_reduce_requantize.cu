// The fused dequantize-reduce-requantize (qgZ's middle step): each thread sums its chunk over
// the k pieces, changes domain only if the two formats differ in rotation, and encodes the sum
// with the lanes of its output block.
#include "kernels/codec_kernels.h"
#include "kernels/device/rotation.cuh"
#include "kernels/device/sum_chunk.cuh"
#include "kernels/launch_util.h"
#include "kernels/reduce_launch.h"

namespace zpp::codec::gpu {
namespace {

template <int kInBits, int kOutBits>
__global__ void __launch_bounds__(device::kMaxLanesPerBlock)
    DequantizeReduceRequantizeKernel(device::ReducePieces pieces, int k,
                                     device::PieceGeometry geometry, bool rotate,
                                     float scale_after_sum, device::PieceGeometry out_geometry,
                                     bool out_rotate, device::RoundingStream rounding,
                                     uint8_t* __restrict__ out_piece) {
  __shared__ uint32_t warp_max[device::kMaxWarpsPerCta];
  const uint64_t first = device::ChunkFirstElement();
  float sum[device::kChunk];
  device::SumChunk<kInBits>(pieces, k, geometry, first, scale_after_sum, sum);
  if (rotate && !out_rotate) device::RotateChunkInverse(sum, first, geometry.count);
  if (!rotate && out_rotate) device::RotateChunkForward(sum, first, geometry.count);
  device::EncodeChunk<kOutBits>(sum, first, out_geometry, rounding, out_piece, warp_max);
}

}  // namespace

Result DequantizeReduceRequantize(std::span<const std::span<const std::byte>> pieces, size_t count,
                                  const Format& format, float scale_after_sum,
                                  const Format& out_format, const Rounding& rounding,
                                  std::span<std::byte> out_piece, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeReduceRequantize";
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  ZPP_CHECK(detail::CheckReduceInputs(kApi, pieces, count, format, scale_after_sum, geometry));
  ZPP_CHECK(CheckFormat(kApi, ncclFloat32, out_format));
  const device::PieceGeometry out_geometry = detail::GeometryOf(count, out_format);
  ZPP_CHECK(CheckPiece(kApi, "out_piece", out_piece.data(), out_piece.size(),
                       out_geometry.scale_bytes + out_geometry.payload_bytes));
  if (count == 0) return ncclSuccess;

  const int threads = detail::ThreadsFor(out_format.block);
  const unsigned grid = detail::GridFor(count, threads);
  const device::ReducePieces packed = detail::PackReducePieces(pieces);
  const int k = static_cast<int>(pieces.size());
  const device::RoundingStream stream_of_bits = detail::StreamOf(rounding);
  auto* out = reinterpret_cast<uint8_t*>(out_piece.data());
  detail::WithBits(format.bits, [&](auto bits) {
    detail::WithBits(out_format.bits, [&](auto out_bits) {
      DequantizeReduceRequantizeKernel<decltype(bits)::value, decltype(out_bits)::value>
          <<<grid, threads, 0, stream>>>(packed, k, geometry, format.rotate, scale_after_sum,
                                         out_geometry, out_format.rotate, stream_of_bits, out);
    });
  });
  return detail::CheckLaunch(kApi);
}

}  // namespace zpp::codec::gpu
