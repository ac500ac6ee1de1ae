// Every block finds the choice itself (at most kMaxHpzCandidates fingerprint reads, from one
// thread, shared with the block), then the grid copies the chosen partition, or the poison byte,
// 16 bytes per thread where every pointer allows it. The copy is one secondary partition: a
// 1/(ranks per node) share of the bytes the hit's intra-node gather moves.
#include "kernels/engine_kernels.h"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"

namespace zpp::codec::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void SelectPartitionKernel(const uint64_t* __restrict__ now, HpzCandidates candidates,
                                      uint32_t hit, unsigned char* __restrict__ send,
                                      uint64_t bytes, uint32_t* __restrict__ counters,
                                      bool vector) {
  __shared__ int chosen;
  if (threadIdx.x == 0) chosen = HpzChoose(candidates, *now);
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    atomicAdd(&counters[kHpzChoicesCounter],
              HpzChoiceTerm(hit, chosen < 0 ? -1 : candidates.position[chosen]));
    if (chosen < 0) atomicAdd(&counters[kHpzFailuresCounter], 1u);
  }
  const unsigned char* from = chosen < 0 ? nullptr : candidates.partition[chosen];
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint64_t done = 0;
  if (vector) {
    const uint64_t quads = bytes / 16;
    const uint4 poison = make_uint4(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu);
    for (uint64_t i = first; i < quads; i += stride) {
      reinterpret_cast<uint4*>(send)[i] =
          from == nullptr ? poison : reinterpret_cast<const uint4*>(from)[i];
    }
    done = quads * 16;
  }
  for (uint64_t i = done + first; i < bytes; i += stride) {
    send[i] = from == nullptr ? kHpzPoisonByte : from[i];
  }
}

}  // namespace

cudaError_t LaunchSelectPartition(const uint64_t* now, const HpzCandidates& candidates,
                                  uint32_t hit, std::span<std::byte> send, uint32_t* counters,
                                  cudaStream_t stream) {
  bool vector = detail::Aligned16(send.data());
  for (uint32_t i = 0; i < candidates.count; ++i) {
    vector = vector && detail::Aligned16(candidates.partition[i]);
  }
  const uint64_t units = vector ? send.size() / 16 : send.size();
  const uint64_t blocks = (units + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks == 0 ? 1 : (blocks < 1024 ? blocks : 1024));
  SelectPartitionKernel<<<grid, kThreads, 0, stream>>>(
      now, candidates, hit, reinterpret_cast<unsigned char*>(send.data()), send.size(), counters,
      vector);
  return cudaGetLastError();
}

namespace detail {
bool LoadHpzSelectKernels() { return LoadKernel(SelectPartitionKernel); }
}  // namespace detail

}  // namespace zpp::codec::gpu
