// hpZ's partition-choice kernel against the CPU reference, byte for byte, with its counters:
// a match (aligned and not, so both copy paths run) and no match (NaN bytes). Skips, saying why,
// where there is no CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codec/hpz_select.h"
#include "codec_gpu/codec_gpu.h"
#include "codec_gpu/device_ops.h"

namespace zpp::codec {
namespace {

// Runs the kernel and the CPU on the same candidates; `offset` misaligns every partition.
void Compare(uint64_t now, size_t bytes, size_t offset) {
  constexpr int kFills = 3;
  const uint64_t fingerprints[kFills] = {100, 200, 300};
  std::vector<std::vector<std::byte>> partitions;
  for (int f = 0; f < kFills; ++f) {
    partitions.emplace_back(bytes + offset);
    for (size_t i = 0; i < bytes + offset; ++i) partitions[f][i] = std::byte((i * 7 + f) & 0xFF);
  }
  uint64_t* device_fingerprints = nullptr;
  uint64_t* device_now = nullptr;
  uint32_t* device_counters = nullptr;
  std::byte* device_partitions = nullptr;
  std::byte* device_send = nullptr;
  ASSERT_EQ(cudaMalloc(&device_fingerprints, sizeof fingerprints), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_now, sizeof now), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_counters, 2 * sizeof(uint32_t)), cudaSuccess);
  const size_t stride = (bytes + offset + 15) / 16 * 16;  // 16-byte aligned partitions
  ASSERT_EQ(cudaMalloc(&device_partitions, kFills * stride), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_send, bytes + offset), cudaSuccess);
  ASSERT_EQ(
      cudaMemcpy(device_fingerprints, fingerprints, sizeof fingerprints, cudaMemcpyHostToDevice),
      cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device_now, &now, sizeof now, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(device_counters, 0, 2 * sizeof(uint32_t)), cudaSuccess);
  HpzCandidates host, device;
  for (int position : {2, 0, 1}) {  // the host's order: planned first
    const uint32_t i = host.count++;
    device.count = host.count;
    host.position[i] = device.position[i] = position;
    host.fingerprint[i] = &fingerprints[position];
    device.fingerprint[i] = device_fingerprints + position;
    host.partition[i] =
        reinterpret_cast<const unsigned char*>(partitions[position].data() + offset);
    std::byte* on_device = device_partitions + position * stride;
    ASSERT_EQ(
        cudaMemcpy(on_device, partitions[position].data(), bytes + offset, cudaMemcpyHostToDevice),
        cudaSuccess);
    device.partition[i] = reinterpret_cast<const unsigned char*>(on_device + offset);
  }
  std::vector<std::byte> expected(bytes);
  uint32_t expected_counters[2] = {0, 0};
  ASSERT_EQ(SelectPartition(&now, host, 9, expected, expected_counters), ncclSuccess);
  ASSERT_EQ(gpu::SelectPartition(device_now, device, 9, {device_send + offset, bytes},
                                 device_counters, nullptr),
            ncclSuccess);
  std::vector<std::byte> got(bytes);
  uint32_t counters[2] = {0, 0};
  ASSERT_EQ(cudaMemcpy(got.data(), device_send + offset, bytes, cudaMemcpyDeviceToHost),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(counters, device_counters, sizeof counters, cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(device_fingerprints);
  cudaFree(device_now);
  cudaFree(device_counters);
  cudaFree(device_partitions);
  cudaFree(device_send);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(counters[0], expected_counters[0]);
  EXPECT_EQ(counters[1], expected_counters[1]);
}

TEST(GpuHpzSelectTest, MatchesTheCpu) {
  std::string reason;
  if (!gpu::DeviceAvailable(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  const size_t bytes = 3 * 1024 * 1024 + 13;  // more than one grid's pass, and a tail
  for (size_t offset : {size_t{0}, size_t{3}}) {
    Compare(/*now=*/200, bytes, offset);  // not the planned fill (2): position 1's partition
    Compare(/*now=*/300, bytes, offset);  // the planned one
    Compare(/*now=*/400, bytes, offset);  // none: NaN bytes and a failure
  }
}

}  // namespace
}  // namespace zpp::codec
