// The fingerprint: a grid-stride loop over 16-byte pairs of words, each thread summing its
// words' hashes, a warp sum, then one 64-bit atomic add per warp. Wrapping addition commutes, so
// the order the atomics land in cannot change the result (kernels/math/fingerprint_math.h).
#include <algorithm>
#include <atomic>

#include "kernels/codec_kernels.h"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/math/codec_math.h"

namespace zpp::codec::gpu {
namespace {

// Word `word` of the buffer, little-endian, zero-padded past `bytes`, read byte by byte.
__device__ __forceinline__ uint64_t LoadWordBytes(const uint8_t* data, uint64_t word,
                                                  uint64_t bytes) {
  uint64_t value = 0;
  for (uint64_t i = 0; i < 8 && 8 * word + i < bytes; ++i) {
    value |= static_cast<uint64_t>(data[8 * word + i]) << (8 * i);
  }
  return value;
}

template <bool kAligned>
__device__ __forceinline__ void FingerprintItem(const uint8_t* __restrict__ data, uint64_t bytes,
                                                unsigned long long* __restrict__ fingerprint) {
  const uint64_t full_words = bytes / 8;
  const uint64_t words = (bytes + 7) / 8;
  const uint64_t pairs = (words + 1) / 2;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  // Every thread compares its words with the first (kFingerprintVaries); a cached 8-byte read.
  const uint64_t first = words == 0 ? 0 : LoadWordBytes(data, 0, bytes);
  uint64_t sum = 0;
  bool varies = false;
  for (uint64_t pair = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; pair < pairs;
       pair += stride) {
    const uint64_t word = 2 * pair;
    if (kAligned && word + 2 <= full_words) {
      const ulonglong2 both = *reinterpret_cast<const ulonglong2*>(data + 8 * word);
      sum += FingerprintWord(word, both.x) + FingerprintWord(word + 1, both.y);
      varies |= FingerprintWordVaries(both.x, first, 8) | FingerprintWordVaries(both.y, first, 8);
    } else {
      for (uint64_t w = word; w < word + 2 && w < words; ++w) {
        const uint64_t value = LoadWordBytes(data, w, bytes);
        sum += FingerprintWord(w, value);
        varies |= FingerprintWordVaries(value, first, w < full_words ? 8 : bytes - 8 * w);
      }
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, offset);
  varies = __any_sync(0xFFFFFFFFu, varies);
  if (threadIdx.x % 32 == 0) {
    atomicAdd(fingerprint, static_cast<unsigned long long>(sum));
    // Every term is even: the OR of bit 0 commutes with the other warps' adds.
    if (varies) atomicOr(fingerprint, static_cast<unsigned long long>(kFingerprintVaries));
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    atomicAdd(fingerprint, static_cast<unsigned long long>(FingerprintLength(bytes)));
  }
}

// Item y (blockIdx.y, then every gridDim.y) is `bytes` from data + y x item_stride, its
// fingerprint at out + y x out_stride (bytes), zeroed before the launch.
template <bool kAligned>
__global__ void __launch_bounds__(256)
    FingerprintKernel(const uint8_t* __restrict__ items_data, uint64_t bytes, uint32_t items,
                      uint64_t item_stride, unsigned char* __restrict__ out, uint64_t out_stride) {
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    const uint8_t* data = items_data + item * item_stride;
    auto* fingerprint = reinterpret_cast<unsigned long long*>(out + item * out_stride);
    FingerprintItem<kAligned>(data, bytes, fingerprint);
  }
}

// One wave of the kernel per device, found at set-up (LoadFingerprintKernels): blocks per SM for
// each alignment, times the SMs. 0: not loaded on that device, asked at the call instead.
constexpr int kMostDevices = 64;
std::atomic<int> g_blocks_per_wave[kMostDevices][2];

int BlocksPerWave(int device, bool aligned) {
  return device >= 0 && device < kMostDevices
             ? g_blocks_per_wave[device][aligned].load(std::memory_order_relaxed)
             : 0;
}

// The device's SMs times the blocks of the kernel each holds; 0 when the SMs cannot be counted.
template <bool kAligned>
int AskBlocksPerWave(int device) {
  int multiprocessors = 0;
  if (cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, FingerprintKernel<kAligned>, 256, 0) !=
          cudaSuccess ||
      per_sm < 1) {
    (void)cudaGetLastError();  // a query that failed is no launch error
    per_sm = 1;
  }
  return multiprocessors * per_sm;
}

}  // namespace

namespace detail {
bool LoadFingerprintKernels() {
  int device = 0;
  if (!LoadKernel(FingerprintKernel<true>) || !LoadKernel(FingerprintKernel<false>) ||
      cudaGetDevice(&device) != cudaSuccess) {
    return false;
  }
  const int aligned = AskBlocksPerWave<true>(device), unaligned = AskBlocksPerWave<false>(device);
  if (aligned == 0 || unaligned == 0) return false;
  if (device >= 0 && device < kMostDevices) {
    g_blocks_per_wave[device][1].store(aligned);
    g_blocks_per_wave[device][0].store(unaligned);
  }
  return true;
}
}  // namespace detail

cudaError_t LaunchFingerprintBatch(const std::byte* data, size_t bytes, uint32_t items,
                                   size_t item_stride, std::byte* out, size_t out_stride,
                                   cudaStream_t stream) {
  if (items == 0) return cudaSuccess;
  int device = 0;
  const size_t pitch = items == 1 ? 8 : out_stride;
  cudaError_t error = cudaGetDevice(&device);
  if (error == cudaSuccess)
    error = cudaMemset2DAsync(out, pitch, 0, sizeof(uint64_t), items, stream);
  if (error != cudaSuccess) return error;
  // Enough threads to keep the memory busy, few enough that the atomics stay negligible: one
  // wave of as many blocks as the kernel's registers let each SM hold (a fixed multiple of the
  // SMs ran a second, mostly idle wave when fewer fit), shared by the items.
  const int threads = 256;
  const uint64_t pairs = (bytes + 15) / 16;
  const uint64_t wanted = (pairs + threads - 1) / threads;
  const auto* first = reinterpret_cast<const uint8_t*>(data);
  auto* fingerprints = reinterpret_cast<unsigned char*>(out);
  const bool aligned = detail::Aligned16(first) && (items == 1 || item_stride % 16 == 0);
  detail::WithBool(aligned, [&](auto is_aligned) {
    constexpr bool kAligned = decltype(is_aligned)::value;
    int wave = BlocksPerWave(device, kAligned);
    // Not loaded at set-up (a test calling the codec directly): ask now.
    if (wave == 0) wave = AskBlocksPerWave<kAligned>(device);
    if (wave == 0) wave = 1;
    const uint64_t per_item = std::max<uint64_t>(1, static_cast<uint64_t>(wave) / items);
    const dim3 grid(static_cast<unsigned>(wanted == 0 ? 1 : std::min(wanted, per_item)),
                    detail::RowsFor(items));
    FingerprintKernel<kAligned>
        <<<grid, threads, 0, stream>>>(first, bytes, items, item_stride, fingerprints, out_stride);
  });
  return cudaGetLastError();
}

}  // namespace zpp::codec::gpu
