// The codec's math, one header for both sides: the CPU reference (src/codec, g++) and the CUDA
// kernels (kernels/*.cu, nvcc) include this and nothing else for arithmetic, which is what makes
// the device output bitwise equal to the host output. Everything in it is __host__ __device__.
#pragma once

#include "kernels/math/block_math.h"        // amax, scale, rounding, int4/int8 packing
#include "kernels/math/fingerprint_math.h"  // the 64-bit buffer fingerprint
#include "kernels/math/float_convert.h"     // fp16 / bf16 <-> fp32
#include "kernels/math/hadamard.h"          // the 32-point rotation
#include "kernels/math/stochastic.h"        // counter-based random bits for stochastic rounding
