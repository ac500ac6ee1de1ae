// qwZ's weight-delta kernels against the CPU codec (codec/weight_delta.h), bit for bit: the
// messages EncodeDelta writes (piece and trailer) for every dtype and delta width, rotated and
// not, aligned and not; and ApplyDeltaBatch's references and failure count over several steps
// of 130 nodes (more rows than one kernel argument list holds), one node's reference damaged on
// one step (NaN there, counted once). Skips, saying why, where there is no CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/weight_delta.h"
#include "codec_gpu/codec_gpu.h"
#include "device_buffer.h"

namespace zpp::codec::testing {
namespace {

class GpuWeightDeltaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu::DeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  }
};

// `count` elements of `dtype`: step 0's weights in [-1, 1], plus `step` updates of at most 1e-3.
std::vector<std::byte> Weights(ncclDataType_t dtype, size_t count, uint32_t seed, int step) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> start(-1.0f, 1.0f), update(-1e-3f, 1e-3f);
  std::vector<float> values(count);
  for (float& v : values) v = start(rng);
  for (int s = 0; s < step; ++s) {
    for (float& v : values) v += update(rng);
  }
  std::vector<std::byte> bytes(count * NcclTypeBytes(dtype));
  StoreElements(bytes.data(), dtype, 0, count, values.data());
  return bytes;
}

// A 16-byte aligned host area of `bytes` (+ `offset`), poisoned.
struct HostArea {
  explicit HostArea(size_t bytes, size_t offset = 0)
      : storage(bytes + offset + 16, std::byte{kPoison}) {
    const auto misalignment = reinterpret_cast<uintptr_t>(storage.data()) % 16;
    data = storage.data() + (16 - misalignment) % 16 + offset;
  }
  std::vector<std::byte> storage;
  std::byte* data;
};

TEST_F(GpuWeightDeltaTest, EncodeIsTheCpuMessageBitwise) {
  const size_t count = 1000;  // a tail block
  for (const ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    const size_t bytes = count * NcclTypeBytes(dtype);
    for (const int bits : {8, 4, 3, 2}) {
      for (const bool rotate : {false, true}) {
        for (const size_t offset : {size_t{0}, NcclTypeBytes(dtype)}) {
          const Format format{bits, rotate ? 32 : 256, rotate};
          const size_t message = DeltaMessageBytes(count, dtype, format);
          HostArea weights(bytes, offset), reference(bytes, offset), cpu(message);
          const std::vector<std::byte> w = Weights(dtype, count, 1, 1);
          const std::vector<std::byte> r = Weights(dtype, count, 1, 0);
          std::memcpy(weights.data, w.data(), bytes);
          std::memcpy(reference.data, r.data(), bytes);
          ASSERT_EQ(EncodeDelta({weights.data, dtype, count}, {reference.data, dtype, count},
                                format, {}, {cpu.data, message}),
                    ncclSuccess);
          DeviceBuffer device_weights(bytes + offset), device_reference(bytes + offset);
          DeviceBuffer device_message(message);
          ASSERT_EQ(
              cudaMemcpy(device_weights.data() + offset, w.data(), bytes, cudaMemcpyHostToDevice),
              cudaSuccess);
          ASSERT_EQ(
              cudaMemcpy(device_reference.data() + offset, r.data(), bytes, cudaMemcpyHostToDevice),
              cudaSuccess);
          ASSERT_EQ(gpu::EncodeDelta({device_weights.data() + offset, dtype, count},
                                     {device_reference.data() + offset, dtype, count}, format, {},
                                     device_message.Span(), nullptr),
                    ncclSuccess);
          EXPECT_EQ(std::memcmp(device_message.ToHost().data(), cpu.data, message), 0)
              << "dtype " << dtype << " int" << bits << (rotate ? " rotated" : "") << " offset "
              << offset;
        }
      }
    }
  }
}

TEST_F(GpuWeightDeltaTest, ApplyIsTheCpuBatchBitwise) {
  const uint32_t nodes = 130;
  const size_t count = 333;
  const ncclDataType_t dtype = ncclBfloat16;
  const Format format{4, 32, false};
  const size_t element = NcclTypeBytes(dtype);
  const size_t shard = count * element;
  const size_t stride = DeltaMessageBytes(count, dtype, format);
  // Both sides start from the same references: every node's step-0 weights.
  std::vector<std::byte> cpu_reference(shard * nodes);
  for (uint32_t node = 0; node < nodes; ++node) {
    const std::vector<std::byte> w = Weights(dtype, count, 100 + node, 0);
    std::memcpy(cpu_reference.data() + node * shard, w.data(), shard);
  }
  DeviceBuffer device_reference(cpu_reference.data(), cpu_reference.size());
  DeviceBuffer device_messages(stride * nodes), held(8 * nodes);
  DeviceBuffer device_failures(sizeof(uint32_t));
  ASSERT_EQ(cudaMemset(device_failures.data(), 0, sizeof(uint32_t)), cudaSuccess);
  uint32_t cpu_failures = 0;
  HostArea messages(stride * nodes);
  for (int step = 1; step <= 3; ++step) {
    // The senders encode against the references as they are (the CPU's: equal to the device's).
    for (uint32_t node = 0; node < nodes; ++node) {
      const std::vector<std::byte> w = Weights(dtype, count, 100 + node, step);
      ASSERT_EQ(
          EncodeDelta({w.data(), dtype, count}, {cpu_reference.data() + node * shard, dtype, count},
                      format, {}, {messages.data + node * stride, stride}),
          ncclSuccess);
    }
    ASSERT_EQ(
        cudaMemcpy(device_messages.data(), messages.data, stride * nodes, cudaMemcpyHostToDevice),
        cudaSuccess);
    if (step == 2) {
      // Node 7's copy differs from its sender's on both sides: NaN there, one failure.
      cpu_reference[7 * shard + 5] ^= std::byte{0x40};
      std::byte damaged = cpu_reference[7 * shard + 5];
      ASSERT_EQ(
          cudaMemcpy(device_reference.data() + 7 * shard + 5, &damaged, 1, cudaMemcpyHostToDevice),
          cudaSuccess);
    }
    ASSERT_EQ(ApplyDeltaBatch({messages.data, stride * nodes}, stride, nodes, count, format,
                              {cpu_reference.data(), dtype, count * nodes}, &cpu_failures),
              ncclSuccess);
    ASSERT_EQ(gpu::ApplyDeltaBatch(device_messages.Span(), stride, nodes, count, format,
                                   {device_reference.data(), dtype, count * nodes}, held.Span(),
                                   reinterpret_cast<uint32_t*>(device_failures.data()), nullptr),
              ncclSuccess);
    EXPECT_EQ(
        std::memcmp(device_reference.ToHost().data(), cpu_reference.data(), cpu_reference.size()),
        0)
        << "step " << step;
    uint32_t gpu_failures = 0;
    std::memcpy(&gpu_failures, device_failures.ToHost().data(), sizeof gpu_failures);
    EXPECT_EQ(gpu_failures, cpu_failures) << "step " << step;
  }
  EXPECT_EQ(cpu_failures, 1u);
}

TEST(GpuWeightDeltaArgsTest, BadArgumentsAreRejectedWithoutADevice) {
  const Format format{4, 32, false};
  uint32_t failures = 0;
  EXPECT_EQ(gpu::EncodeDelta({nullptr, ncclFloat32, 10}, {nullptr, ncclFloat32, 10}, format, {}, {},
                             nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(gpu::ApplyDeltaBatch({}, 0, 1, 10, format, {nullptr, ncclFloat32, 10}, {}, &failures,
                                 nullptr),
            ncclInvalidArgument);
}

}  // namespace
}  // namespace zpp::codec::testing
