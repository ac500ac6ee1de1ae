// RAII owners for the CUDA resources the cuda_nccl backend hands out (MSCCL++'s habit): a
// stream, an event, device memory, mapped host memory, the current device. Each frees what it
// owns in its destructor, and a failed CUDA call becomes a Result with one WARN.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backend/backend.h"
#include "log/check.h"

namespace zpp::cuda {

// ncclSuccess, or one WARN naming `what` and ncclUnhandledCudaError.
Result Check(cudaError_t error, const char* what);
#define ZPP_CUDA_CHECK(call) ZPP_CHECK(::zpp::cuda::Check((call), #call))

class CudaStream final : public Stream {
 public:
  // Borrows the caller's stream (the NCCL call's), which zpp never destroys.
  static CudaStream Borrow(cudaStream_t handle) { return CudaStream(handle, false); }
  static Result Create(std::unique_ptr<Stream>* out);
  ~CudaStream() override;
  CudaStream(CudaStream&& other) noexcept : handle_(other.handle_), owned_(other.owned_) {
    other.owned_ = false;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t handle() const { return handle_; }
  StreamIdentity identity() const override {
    return {reinterpret_cast<uintptr_t>(handle_), handle_ != cudaStreamPerThread};
  }

 private:
  CudaStream(cudaStream_t handle, bool owned) : handle_(handle), owned_(owned) {}
  cudaStream_t handle_;
  bool owned_;
};

class CudaEvent final : public Event {
 public:
  // Without timing (cudaEventDisableTiming: the fences'), or with it (the tuner's).
  static Result Create(std::unique_ptr<Event>* out, bool timing = false);
  ~CudaEvent() override;
  cudaEvent_t handle() const { return handle_; }

 private:
  explicit CudaEvent(cudaEvent_t handle) : handle_(handle) {}
  cudaEvent_t handle_;
};

class DeviceBuffer final : public DeviceMemory {
 public:
  // `quiet`: no room is an answer (Backend::TryAllocate), logged at INFO instead of a WARN.
  static Result Create(size_t bytes, std::unique_ptr<DeviceMemory>* out, bool quiet = false);
  ~DeviceBuffer() override;
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  DeviceBuffer(void* data, size_t size) : data_(data), size_(size) {}
  void* data_;
  size_t size_;
};

// Pinned host memory mapped into the device's address space (UVA: one pointer for both).
class MappedHostBuffer final : public DeviceMemory {
 public:
  static Result Create(size_t bytes, std::unique_ptr<DeviceMemory>* out);
  ~MappedHostBuffer() override;
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  MappedHostBuffer(void* data, size_t size) : data_(data), size_(size) {}
  void* data_;
  size_t size_;
};

// Makes `device` current for the scope and restores the caller's device after.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  Result status() const { return status_; }

 private:
  int previous_ = -1;
  Result status_ = ncclSuccess;
};

inline cudaStream_t HandleOf(Stream& stream) { return static_cast<CudaStream&>(stream).handle(); }
inline cudaEvent_t HandleOf(Event& event) { return static_cast<CudaEvent&>(event).handle(); }

}  // namespace zpp::cuda
