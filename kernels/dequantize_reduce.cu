// The fused dequantize-reduce to a tensor: each thread sums its chunk over the k pieces, rotates
// the sum back with its run's lanes, and stores it narrowed to the output dtype.
#include "kernels/codec_kernels.h"
#include "kernels/device/rotation.cuh"
#include "kernels/device/sum_chunk.cuh"
#include "kernels/device/tensor_io.cuh"
#include "kernels/launch_util.h"
#include "kernels/reduce_launch.h"

namespace zpp::codec::gpu {
namespace {

template <ncclDataType_t kDtype, int kBits, bool kAligned>
__global__ void __launch_bounds__(256)
    DequantizeReduceKernel(device::ReducePieces pieces, int k, device::PieceGeometry geometry,
                           bool rotate, float scale_after_sum, void* __restrict__ output) {
  const uint64_t first = device::ChunkFirstElement();
  float sum[device::kChunk];
  device::SumChunk<kBits>(pieces, k, geometry, first, scale_after_sum, sum);
  if (rotate) device::RotateChunkInverse(sum, first, geometry.count);
  if (first < geometry.count) {
    device::StoreChunk<kDtype, kAligned>(output, 0, first, geometry.count, sum);
  }
}

}  // namespace

Result DequantizeReduce(std::span<const std::span<const std::byte>> pieces, size_t count,
                        const Format& format, float scale_after_sum, TensorView output,
                        cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::DequantizeReduce";
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  ZPP_CHECK(detail::CheckReduceInputs(kApi, pieces, count, format, scale_after_sum, geometry));
  ZPP_CHECK(CheckTensor(kApi, "output", output.data, output.dtype, output.count));
  ZPP_CHECK_ARG(output.count == count, "%s: output has %zu elements, the pieces %zu", kApi,
                output.count, count);
  if (count == 0) return ncclSuccess;

  const int threads = 256;
  const unsigned grid = detail::GridFor(count, threads);
  const device::ReducePieces packed = detail::PackReducePieces(pieces);
  const int k = static_cast<int>(pieces.size());
  detail::WithDtype(output.dtype, [&](auto dtype) {
    detail::WithBits(format.bits, [&](auto bits) {
      detail::WithBool(detail::Aligned16(output.data), [&](auto aligned) {
        DequantizeReduceKernel<decltype(dtype)::value, decltype(bits)::value,
                               decltype(aligned)::value><<<grid, threads, 0, stream>>>(
            packed, k, geometry, format.rotate, scale_after_sum, output.data);
      });
    });
  });
  return detail::CheckLaunch(kApi);
}

}  // namespace zpp::codec::gpu
