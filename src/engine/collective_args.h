// The arguments of the two collectives zpp takes over, as NCCL's calls give them.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "plan/plan.h"

namespace zpp::engine {

struct AllGatherArgs {
  const void* send = nullptr;  // count elements
  void* recv = nullptr;        // world x count elements, rank r's at r x count
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
};

struct ReduceScatterArgs {
  const void* send = nullptr;  // world x count elements
  void* recv = nullptr;        // count elements: chunk `rank` of the reduction
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  plan::Reduction reduction = plan::Reduction::kSum;
  float premul = 1.0f;  // the host scalar of a pre-multiplied sum (ncclScalarHostImmediate)
  // ncclScalarDevice: one element of `dtype` in device memory, read while the call runs; when
  // set, `premul` is ignored.
  const void* premul_device = nullptr;
};

}  // namespace zpp::engine
