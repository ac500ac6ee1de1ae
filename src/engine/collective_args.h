// The arguments of the collectives zpp takes over, as NCCL's calls give them.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "epoch/training_pass.h"
#include "plan/plan.h"

namespace zpp::engine {

struct AllGatherArgs {
  const void* send = nullptr;  // count elements
  void* recv = nullptr;        // world x count elements, rank r's at r x count
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  // The pass of the training step that issued it: hpZ pairs backward gathers with forward fills.
  TrainingPass pass = TrainingPass::kUnknown;
};

// The planner's view of an all-gather: what is identical on every rank (never the pointers).
inline plan::Call CallOf(const AllGatherArgs& args) {
  return {plan::CollectiveOp::kAllGather, args.count, args.dtype, plan::Reduction::kNone};
}

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

inline plan::Call CallOf(const ReduceScatterArgs& args) {
  return {plan::CollectiveOp::kReduceScatter, args.count, args.dtype, args.reduction};
}

// In place when send == recv, as NCCL allows (DDP's buckets, HSDP's replica all-reduce).
struct AllReduceArgs {
  const void* send = nullptr;  // count elements
  void* recv = nullptr;        // count elements: the reduction, the same bytes on every rank
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  plan::Reduction reduction = plan::Reduction::kSum;
  float premul = 1.0f;  // as ReduceScatterArgs
  const void* premul_device = nullptr;
};

inline plan::Call CallOf(const AllReduceArgs& args) {
  return {plan::CollectiveOp::kAllReduce, args.count, args.dtype, args.reduction};
}

}  // namespace zpp::engine
