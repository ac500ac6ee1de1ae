#include "cuda_nccl/cuda_resources.h"

#include <memory>

#include "cuda_nccl/allocation_size.h"
#include "log/log.h"

namespace zpp::cuda {

Result Check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return ncclSuccess;
  ZPP_WARN(
      "%s failed: %s; zpp's step fails with ncclUnhandledCudaError (ZPP_DEBUG=INFO shows which "
      "step)",
      what, cudaGetErrorString(error));
  cudaGetLastError();  // a non-sticky error must not fail the next, unrelated check
  return ncclUnhandledCudaError;
}

Result CudaStream::Create(std::unique_ptr<Stream>* out) {
  cudaStream_t handle = nullptr;
  ZPP_CUDA_CHECK(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking));
  out->reset(new CudaStream(handle, true));
  return ncclSuccess;
}

CudaStream::~CudaStream() {
  if (owned_) cudaStreamDestroy(handle_);
}

Result CudaEvent::Create(std::unique_ptr<Event>* out, bool timing) {
  cudaEvent_t handle = nullptr;
  ZPP_CUDA_CHECK(
      cudaEventCreateWithFlags(&handle, timing ? cudaEventDefault : cudaEventDisableTiming));
  out->reset(new CudaEvent(handle));
  return ncclSuccess;
}

CudaEvent::~CudaEvent() { cudaEventDestroy(handle_); }

Result DeviceBuffer::Create(size_t bytes, std::unique_ptr<DeviceMemory>* out, bool quiet) {
  void* data = nullptr;
  const cudaError_t error = cudaMalloc(&data, AllocationSize(bytes));
  if (error != cudaSuccess && quiet) {
    cudaGetLastError();  // not sticky: the next, unrelated check must not see it
    ZPP_INFO(kInit, "no room for %zu bytes of device memory (%s): a smaller size is tried", bytes,
             cudaGetErrorString(error));
    return ncclUnhandledCudaError;
  }
  ZPP_CHECK(Check(error, "cudaMalloc"));
  out->reset(new DeviceBuffer(data, bytes));
  return ncclSuccess;
}

DeviceBuffer::~DeviceBuffer() { cudaFree(data_); }

Result MappedHostBuffer::Create(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
  void* data = nullptr;
  ZPP_CUDA_CHECK(cudaHostAlloc(&data, AllocationSize(bytes), cudaHostAllocMapped));
  out->reset(new MappedHostBuffer(data, bytes));
  return ncclSuccess;
}

MappedHostBuffer::~MappedHostBuffer() { cudaFreeHost(data_); }

DeviceScope::DeviceScope(int device) {
  status_ = Check(cudaGetDevice(&previous_), "cudaGetDevice");
  if (status_ == ncclSuccess && previous_ != device) {
    status_ = Check(cudaSetDevice(device), "cudaSetDevice");
  }
}

DeviceScope::~DeviceScope() {
  int current = -1;
  if (previous_ >= 0 && cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    cudaSetDevice(previous_);
  }
}

}  // namespace zpp::cuda
