// A grid-stride element loop: the pre-multiplied reduce-scatter's scaling is memory-bound and
// rare, so plain element access is enough.
#include <cstring>

#include "kernels/device/tensor_io.cuh"
#include "kernels/engine_kernels.h"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"

namespace zpp::codec::gpu {
namespace {

constexpr int kThreads = 256;

unsigned GridOf(uint64_t count) {
  const uint64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1024 ? (blocks == 0 ? 1 : blocks) : 1024);
}

template <ncclDataType_t kDtype>
__global__ void ScaleKernel(void* data, uint64_t count, const void* scalar) {
  const float factor = device::WidenElement<kDtype>(device::LoadElementBits<kDtype>(scalar, 0));
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const float value = device::WidenElement<kDtype>(device::LoadElementBits<kDtype>(data, i));
    device::StoreElementBits<kDtype>(data, i, device::NarrowElement<kDtype>(value * factor));
  }
}

struct SmallRecord {
  unsigned char bytes[kSmallCopyBytes];
};

__global__ void CopySmallKernel(unsigned char* dst, SmallRecord record, uint32_t bytes) {
  for (uint32_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = record.bytes[i];
}

}  // namespace

cudaError_t LaunchScaleByDeviceScalar(TensorView data, const void* scalar, cudaStream_t stream) {
  if (data.count == 0) return cudaSuccess;
  const unsigned grid = GridOf(data.count);
  switch (data.dtype) {
    case ncclFloat32:
      ScaleKernel<ncclFloat32><<<grid, kThreads, 0, stream>>>(data.data, data.count, scalar);
      break;
    case ncclFloat16:
      ScaleKernel<ncclFloat16><<<grid, kThreads, 0, stream>>>(data.data, data.count, scalar);
      break;
    default:
      ScaleKernel<ncclBfloat16><<<grid, kThreads, 0, stream>>>(data.data, data.count, scalar);
      break;
  }
  return cudaGetLastError();
}

cudaError_t LaunchCopySmallFromHost(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  SmallRecord record;
  memcpy(record.bytes, src, bytes);
  CopySmallKernel<<<1, 256, 0, stream>>>(static_cast<unsigned char*>(dst), record,
                                         static_cast<uint32_t>(bytes));
  return cudaGetLastError();
}

namespace detail {
bool LoadEngineKernels() {
  return LoadKernel(ScaleKernel<ncclFloat32>) && LoadKernel(ScaleKernel<ncclFloat16>) &&
         LoadKernel(ScaleKernel<ncclBfloat16>) && LoadKernel(CopySmallKernel);
}
}  // namespace detail

}  // namespace zpp::codec::gpu
