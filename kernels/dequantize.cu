// Dequantize: a 2-D grid, x over the chunks of a piece and y over the pieces of a batch; each
// thread decodes its chunk, rotates it back with its run's lanes and stores it at the piece's
// place in the output (16-byte vectors for every piece whose place is aligned, whatever the
// others' are). Places come by formula (codec::BatchMap: one launch for any number of pieces)
// or, for the list form, as kernel arguments in launches of 128.
#include <algorithm>

#include "kernels/codec_kernels.h"
#include "kernels/device/piece_codec.cuh"
#include "kernels/device/rotation.cuh"
#include "kernels/device/tensor_io.cuh"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/math/batch_places.h"
#include "kernels/math/nccl_types.h"

namespace zpp::codec::gpu {
namespace {

// 128 pieces, 2 KiB of kernel arguments: well inside the 4 KiB every CUDA version accepts.
constexpr size_t kPiecesPerLaunch = 128;

struct PieceList {
  const uint8_t* piece[kPiecesPerLaunch];
  uint64_t output_offset[kPiecesPerLaunch];
  uint32_t count;
  __device__ __forceinline__ uint32_t items() const { return count; }
  __device__ __forceinline__ void Place(uint32_t item, const uint8_t** piece_at,
                                        uint64_t* offset) const {
    *piece_at = piece[item];
    *offset = output_offset[item];
  }
};

struct PieceMap {
  const uint8_t* pieces;
  BatchPlaces map;
  __device__ __forceinline__ uint32_t items() const { return map.items; }
  __device__ __forceinline__ void Place(uint32_t item, const uint8_t** piece_at,
                                        uint64_t* offset) const {
    uint64_t from = 0;
    map.Place(item, &from, offset);
    *piece_at = pieces + from;
  }
};

template <ncclDataType_t kDtype, int kBits, typename Places>
__global__ void __launch_bounds__(256)
    DequantizeKernel(Places places, device::PieceGeometry geometry, bool rotate,
                     void* __restrict__ output) {
  constexpr uint64_t kElement = NcclTypeBytes(kDtype);
  const uint64_t first = device::ChunkFirstElement();
  const uint32_t items = places.items();
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    const uint8_t* piece = nullptr;
    uint64_t offset = 0;
    places.Place(item, &piece, &offset);
    float values[device::kChunk] = {};
    if (first < geometry.count) device::DecodeChunk<kBits>(piece, geometry, first, values);
    if (rotate) device::RotateChunkInverse(values, first, geometry);
    if (first < geometry.count) {
      void* place = static_cast<uint8_t*>(output) + offset * kElement;
      if (detail::Aligned16(place)) {
        device::StoreChunk<kDtype, true>(place, 0, first, geometry.count, values);
      } else {
        device::StoreChunk<kDtype, false>(place, 0, first, geometry.count, values);
      }
    }
  }
}

template <typename Places>
cudaError_t Launch(const Places& places, uint64_t items, size_t count, const Format& format,
                   TensorView output, cudaStream_t stream) {
  const int threads = 256;
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  const dim3 grid(detail::GridFor(count, threads), detail::RowsFor(items));
  detail::WithDtypeAndBits(output.dtype, format.bits, [&]<ncclDataType_t kDtype, int kBits>() {
    DequantizeKernel<kDtype, kBits>
        <<<grid, threads, 0, stream>>>(places, geometry, format.rotate, output.data);
  });
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchDequantizeBatch(const std::byte* pieces, size_t count, const BatchMap& map,
                                  const Format& format, TensorView output, cudaStream_t stream) {
  if (count == 0 || map.items() == 0) return cudaSuccess;
  const PieceMap places{reinterpret_cast<const uint8_t*>(pieces), BatchPlaces::Of(map)};
  return Launch(places, map.items(), count, format, output, stream);
}

cudaError_t LaunchDequantize(std::span<const PlacedPiece> pieces, size_t count,
                             const Format& format, TensorView output, cudaStream_t stream) {
  if (count == 0 || pieces.empty()) return cudaSuccess;
  for (size_t start = 0; start < pieces.size(); start += kPiecesPerLaunch) {
    const size_t n = std::min(kPiecesPerLaunch, pieces.size() - start);
    PieceList list{};
    list.count = static_cast<uint32_t>(n);
    for (size_t i = 0; i < n; ++i) {
      list.piece[i] = reinterpret_cast<const uint8_t*>(pieces[start + i].bytes.data());
      list.output_offset[i] = pieces[start + i].output_offset;
    }
    const cudaError_t error = Launch(list, n, count, format, output, stream);
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

namespace detail {
bool LoadDequantizeKernels() {
  bool ok = true;
  ForEveryDtypeAndBits([&]<ncclDataType_t kDtype, int kBits>() {
    ok = LoadKernel(&DequantizeKernel<kDtype, kBits, PieceList>) &&
         LoadKernel(&DequantizeKernel<kDtype, kBits, PieceMap>) && ok;
  });
  return ok;
}
}  // namespace detail

}  // namespace zpp::codec::gpu
