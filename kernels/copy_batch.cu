// A batch of equal-sized copies in one launch (hpZ's unquantized intra-node placement): a 2-D
// grid, x over the 16-byte words of one item and y over the items (codec::BatchMap). An item
// whose source and destination are both 16-byte aligned moves words; any other moves bytes.
#include "kernels/codec_kernels.h"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/math/batch_places.h"

namespace zpp::codec::gpu {
namespace {

__global__ void __launch_bounds__(256)
    CopyBatchKernel(const uint8_t* __restrict__ src, uint8_t* __restrict__ dst, uint64_t bytes,
                    BatchPlaces places) {
  const uint64_t word = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t first = 16 * word;
  if (first >= bytes) return;
  const uint32_t items = places.items;
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    uint64_t from = 0, to = 0;
    places.Place(item, &from, &to);
    const uint8_t* in = src + from;
    uint8_t* out = dst + to;
    if (detail::Aligned16(in) && detail::Aligned16(out) && first + 16 <= bytes) {
      *reinterpret_cast<uint4*>(out + first) = *reinterpret_cast<const uint4*>(in + first);
    } else {
      for (uint64_t b = first; b < first + 16 && b < bytes; ++b) out[b] = in[b];
    }
  }
}

}  // namespace

cudaError_t LaunchCopyBatch(const std::byte* src, std::byte* dst, size_t bytes, const BatchMap& map,
                            cudaStream_t stream) {
  if (bytes == 0 || map.items() == 0) return cudaSuccess;
  const int threads = 256;
  const uint64_t words = (bytes + 15) / 16;
  const dim3 grid(static_cast<unsigned>((words + threads - 1) / threads),
                  detail::RowsFor(map.items()));
  CopyBatchKernel<<<grid, threads, 0, stream>>>(reinterpret_cast<const uint8_t*>(src),
                                                reinterpret_cast<uint8_t*>(dst), bytes,
                                                BatchPlaces::Of(map));
  return cudaGetLastError();
}

namespace detail {
bool LoadCopyBatchKernels() { return LoadKernel(CopyBatchKernel); }
}  // namespace detail

}  // namespace zpp::codec::gpu
