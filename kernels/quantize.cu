// Quantize, batched: a 2-D grid, x over the chunks of one piece and y over the items of the
// batch (codec::BatchMap). Each thread loads its chunk of its item's input (16-byte vectors
// when that item's input is aligned), widens it to fp32, rotates it with its run's lanes, and
// encodes it with its block's lanes into the item's piece.
#include "kernels/codec_kernels.h"
#include "kernels/device/rotation.cuh"
#include "kernels/device/tensor_io.cuh"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/math/batch_places.h"
#include "kernels/math/nccl_types.h"

namespace zpp::codec::gpu {
namespace {

template <ncclDataType_t kDtype, int kBits>
__global__ void __launch_bounds__(device::kMaxLanesPerBlock)
    QuantizeKernel(const void* __restrict__ input, BatchPlaces places,
                   device::PieceGeometry geometry, bool rotate, device::RoundingStream rounding,
                   uint8_t* __restrict__ pieces) {
  __shared__ uint32_t warp_max[device::kMaxWarpsPerCta];
  constexpr uint64_t kElement = NcclTypeBytes(kDtype);
  const uint64_t first = device::ChunkFirstElement();
  const uint32_t items = places.items;
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    if (item != blockIdx.y) __syncthreads();  // the last item's block max is read by all
    uint64_t from = 0, to = 0;
    places.Place(item, &from, &to);
    const auto* data = static_cast<const uint8_t*>(input) + from * kElement;
    float values[device::kChunk];
    if (detail::Aligned16(data)) {
      device::LoadChunk<kDtype, true>(data, first, geometry.count, values);
    } else {
      device::LoadChunk<kDtype, false>(data, first, geometry.count, values);
    }
    if (rotate) device::RotateChunkForward(values, first, geometry);
    device::RoundingStream mine = rounding;
    mine.first_block += static_cast<uint64_t>(item) * geometry.blocks;
    device::EncodeChunk<kBits>(values, first, geometry, mine, pieces + to, warp_max);
  }
}

}  // namespace

cudaError_t LaunchQuantizeBatch(ConstTensorView input, size_t count, const BatchMap& map,
                                const Format& format, const Rounding& rounding, std::byte* pieces,
                                cudaStream_t stream) {
  if (count == 0 || map.items() == 0) return cudaSuccess;
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  const int threads = detail::ThreadsFor(format.block);
  const dim3 grid(detail::GridFor(count, threads), detail::RowsFor(map.items()));
  const device::RoundingStream stream_of_bits = detail::StreamOf(rounding);
  auto* out = reinterpret_cast<uint8_t*>(pieces);
  detail::WithDtypeAndBits(input.dtype, format.bits, [&]<ncclDataType_t kDtype, int kBits>() {
    QuantizeKernel<kDtype, kBits><<<grid, threads, 0, stream>>>(
        input.data, BatchPlaces::Of(map), geometry, format.rotate, stream_of_bits, out);
  });
  return cudaGetLastError();
}

namespace detail {
bool LoadQuantizeKernels() {
  bool ok = true;
  ForEveryDtypeAndBits([&]<ncclDataType_t kDtype, int kBits>() {
    ok = LoadKernel(&QuantizeKernel<kDtype, kBits>) && ok;
  });
  return ok;
}
}  // namespace detail

}  // namespace zpp::codec::gpu
