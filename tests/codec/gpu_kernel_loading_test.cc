// Every zpp kernel loads at set-up (kernels/kernel_loading.h), so that no first launch in the
// middle of training loads a module while NCCL kernels spin on the device. Skips, saying why,
// where there is no CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "codec_gpu/codec_gpu.h"
#include "codec_gpu/device_ops.h"

namespace zpp::codec {
namespace {

TEST(GpuKernelLoadingTest, EveryKernelLoadsAndLoadingTwiceIsHarmless) {
  std::string reason;
  if (!gpu::DeviceAvailable(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  // Under lazy loading (the default since CUDA 12.2), nothing is loaded before this.
  EXPECT_EQ(gpu::LoadKernels(), ncclSuccess);
  EXPECT_EQ(gpu::LoadKernels(), ncclSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace zpp::codec
