// Every zpp kernel loaded into the current device's context now, at communicator set-up: under
// CUDA's lazy loading (the default since CUDA 12.2) a kernel's first launch loads it, and a load
// in the middle of training can wait on NCCL kernels spinning on the same device, which wait on
// this rank's next collective: a deadlock. cudaFuncGetAttributes on each instantiation loads it
// (the CUDA programming guide's way to force a lazy load). Also caches what the fingerprint
// launch asks the device per call today (its SM count and the kernel's occupancy), so that no
// device query is left on the collective path.
#pragma once

#include <cuda_runtime_api.h>

namespace zpp::codec::gpu {

// Loads every kernel into the current device's context: nullptr, or the kernel file
// (kernels/*.cu) one of whose kernels did not load (cudaGetLastError says why).
const char* LoadEveryKernel();

namespace detail {

template <typename Kernel>
bool LoadKernel(Kernel* kernel) {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)) == cudaSuccess;
}

// One per kernel file (kernels/*.cu): every instantiation its launches can choose.
bool LoadQuantizeKernels();
bool LoadDequantizeKernels();
bool LoadDequantizeReduceKernels();
bool LoadDequantizeReduceRequantizeKernels();
bool LoadEngineKernels();
bool LoadFingerprintKernels();
bool LoadHpzSelectKernels();
bool LoadReusePatternKernels();
bool LoadCopyBatchKernels();
bool LoadWeightDeltaKernels();

}  // namespace detail
}  // namespace zpp::codec::gpu
