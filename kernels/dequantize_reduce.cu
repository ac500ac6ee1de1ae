// The fused dequantize-reduce to a tensor: a 2-D grid, x over the chunks of a sum and y over the
// sums of a batch; each thread sums its chunk over the sum's k pieces, rotates the sum back with
// its run's lanes, and stores it narrowed to the output dtype (16-byte vectors where that sum's
// place is aligned).
#include "kernels/codec_kernels.h"
#include "kernels/device/rotation.cuh"
#include "kernels/device/sum_chunk.cuh"
#include "kernels/device/tensor_io.cuh"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/math/nccl_types.h"
#include "kernels/reduce_launch.h"

namespace zpp::codec::gpu {
namespace {

template <ncclDataType_t kDtype, int kBits, typename Pieces>
__global__ void __launch_bounds__(256)
    DequantizeReduceKernel(Pieces pieces, uint32_t items, int k, device::PieceGeometry geometry,
                           bool rotate, float scale_after_sum, void* __restrict__ output) {
  constexpr uint64_t kElement = NcclTypeBytes(kDtype);
  const uint64_t first = device::ChunkFirstElement();
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    float sum[device::kChunk];
    device::SumChunk<kBits>(pieces, item, k, geometry, first, scale_after_sum, sum);
    if (rotate) device::RotateChunkInverse(sum, first, geometry);
    if (first < geometry.count) {
      void* place = static_cast<uint8_t*>(output) + item * geometry.count * kElement;
      if (detail::Aligned16(place)) {
        device::StoreChunk<kDtype, true>(place, 0, first, geometry.count, sum);
      } else {
        device::StoreChunk<kDtype, false>(place, 0, first, geometry.count, sum);
      }
    }
  }
}

template <typename Pieces>
cudaError_t Launch(const Pieces& pieces, uint32_t items, int k, size_t count, const Format& format,
                   float scale_after_sum, TensorView output, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const int threads = 256;
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  const dim3 grid(detail::GridFor(count, threads), detail::RowsFor(items));
  detail::WithDtypeAndBits(output.dtype, format.bits, [&]<ncclDataType_t kDtype, int kBits>() {
    DequantizeReduceKernel<kDtype, kBits><<<grid, threads, 0, stream>>>(
        pieces, items, k, geometry, format.rotate, scale_after_sum, output.data);
  });
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchDequantizeReduce(std::span<const std::span<const std::byte>> pieces, size_t count,
                                   const Format& format, float scale_after_sum, TensorView output,
                                   cudaStream_t stream) {
  return Launch(detail::PackReducePieces(pieces), 1, static_cast<int>(pieces.size()), count, format,
                scale_after_sum, output, stream);
}

cudaError_t LaunchDequantizeReduceBatch(const std::byte* pieces, const ReduceBatch& batch,
                                        size_t count, const Format& format, float scale_after_sum,
                                        TensorView output, cudaStream_t stream) {
  const device::StridedPieces strided{reinterpret_cast<const uint8_t*>(pieces), batch};
  return Launch(strided, batch.items, static_cast<int>(batch.terms), count, format, scale_after_sum,
                output, stream);
}

namespace detail {
bool LoadDequantizeReduceKernels() {
  bool ok = true;
  ForEveryDtypeAndBits([&]<ncclDataType_t kDtype, int kBits>() {
    ok = LoadKernel(&DequantizeReduceKernel<kDtype, kBits, device::ReducePieces>) &&
         LoadKernel(&DequantizeReduceKernel<kDtype, kBits, device::StridedPieces>) && ok;
  });
  return ok;
}
}  // namespace detail

}  // namespace zpp::codec::gpu
