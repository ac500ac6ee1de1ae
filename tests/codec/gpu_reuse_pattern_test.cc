// hpZ's reuse-pattern kernel against the CPU reference, bit for bit (pattern and hash), on
// thousands of calls with many repeats. Skips, saying why, where there is no CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "codec/reuse_pattern.h"
#include "codec_gpu/codec_gpu.h"
#include "codec_gpu/device_ops.h"

namespace zpp::codec {
namespace {

TEST(GpuReusePatternTest, MatchesTheCpu) {
  std::string reason;
  if (!gpu::DeviceAvailable(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  constexpr uint32_t kCalls = 3000;  // more than one thread block
  std::mt19937_64 generator(20261123);
  std::vector<uint64_t> fingerprints(kCalls);
  for (uint64_t& f : fingerprints) f = generator() % 700;  // many repeats
  std::vector<int32_t> expected(kCalls);
  uint64_t expected_hash = 0;
  ASSERT_EQ(ReusePattern(fingerprints, 42, expected, &expected_hash), ncclSuccess);

  uint64_t* device_fingerprints = nullptr;
  int32_t* device_pattern = nullptr;
  uint64_t* device_hash = nullptr;
  ASSERT_EQ(cudaMalloc(&device_fingerprints, kCalls * sizeof(uint64_t)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_pattern, kCalls * sizeof(int32_t)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_hash, sizeof(uint64_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device_fingerprints, fingerprints.data(), kCalls * sizeof(uint64_t),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(
      gpu::ReusePattern(device_fingerprints, kCalls, 42, device_pattern, device_hash, nullptr),
      ncclSuccess);
  std::vector<int32_t> pattern(kCalls);
  uint64_t hash = 0;
  ASSERT_EQ(
      cudaMemcpy(pattern.data(), device_pattern, kCalls * sizeof(int32_t), cudaMemcpyDeviceToHost),
      cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&hash, device_hash, sizeof hash, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(device_fingerprints);
  cudaFree(device_pattern);
  cudaFree(device_hash);
  EXPECT_EQ(pattern, expected);
  EXPECT_EQ(hash, expected_hash);
}

}  // namespace
}  // namespace zpp::codec
