// ZPP_HD marks a function that the CPU reference (g++) and the CUDA kernels (nvcc) both compile,
// so the two sides run the same operations in the same order.
#pragma once

#if defined(__CUDACC__)
#define ZPP_HD __host__ __device__ __forceinline__
#else
#define ZPP_HD inline
#endif

// "#pragma unroll" for the device pass only: g++ (the host pass of nvcc, and the CPU reference)
// would warn about an unknown pragma, and warnings are errors.
#if defined(__CUDA_ARCH__)
#define ZPP_UNROLL _Pragma("unroll")
#else
#define ZPP_UNROLL
#endif
