// Device memory for the GPU codec tests: a copy of a host byte range, or poisoned bytes, so
// that an element a kernel fails to write shows.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace zpp::codec::testing {

inline constexpr uint8_t kPoison = 0xA5;

// Device memory holding a copy of a host byte range; poisoned when made empty.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(data_, kPoison, bytes == 0 ? 1 : bytes), cudaSuccess);
  }
  DeviceBuffer(const void* host, size_t bytes) : DeviceBuffer(bytes) {
    EXPECT_EQ(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::byte* data() { return static_cast<std::byte*>(data_); }
  std::span<std::byte> Span() { return {data(), bytes_}; }
  std::span<const std::byte> ConstSpan() { return {data(), bytes_}; }
  std::vector<std::byte> ToHost() {
    std::vector<std::byte> host(bytes_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace zpp::codec::testing
