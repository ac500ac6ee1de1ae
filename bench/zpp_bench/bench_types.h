// What zpp-bench measures: one collective case (an operation, a mode, a dtype, a size) and the
// row of the nccl-tests-style table it gives, plus step mode's per-configuration figures.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"
#include "step/step_replay.h"

namespace zpp::bench {

// zero++'s techniques with ZPP_TUNE=auto: the tuner calibrates each communicator and chooses per
// call among them and NCCL (the table's "plan" column says what it chose).
inline constexpr std::string_view kAutoMode = "auto";
// Plain NCCL's calls made through zpp's exported hooks (libzpp.so beside zpp-bench, every
// technique off): the interposer's own cost against "plain" (the nccl backend; issue 45).
inline constexpr std::string_view kPassThroughMode = "passthrough";

struct CollectiveCase {
  plan::CollectiveOp op = plan::CollectiveOp::kAllGather;
  std::string mode;  // step::ModeName of the settings
  plan::Settings settings;
  bool tune = false;  // mode "auto": zero++'s techniques with ZPP_TUNE=auto choosing per call
  bool through_zpp = false;  // mode "passthrough"
  ncclDataType_t dtype = ncclBfloat16;
  // Elements per rank: sendcount (all-gather), recvcount (reduce-scatter), count (all-reduce).
  uint64_t count = 0;
  int warmup = 1;
  int iterations = 5;
};

// What a runner measured for one case.
struct Measurement {
  double time_us = 0;  // median over the timed iterations
  // Bytes all ranks sent over each link class in one call.
  uint64_t bytes_intra_node = 0;
  uint64_t bytes_inter_node = 0;
  uint64_t bytes_inter_rack = 0;
  double rel_l2_err = 0;  // all outputs against the fp64 reference
  double max_abs_err = 0;
  std::optional<uint64_t> wrong;  // outputs off the reference, for lossless plans only
  std::string plan;               // the plan the engine chose (PlanKindName)
  std::optional<double> host_us;  // the median host time of making the call (the nccl runner)
  // Kernels and collectives one call enqueued on rank 0 (the mean over the calls), where the
  // runner counts them (the sim runner does).
  std::optional<double> kernel_launches;
  std::optional<double> collective_launches;
};

// One table row: nccl-tests' columns (size = the whole gathered / scattered / reduced buffer) and
// ours.
struct Row {
  CollectiveCase what;
  uint64_t bytes = 0;  // count x element size
  uint64_t count = 0;  // elements of that buffer (nccl-tests' count)
  double algbw_gbps = 0;
  double busbw_gbps = 0;  // nccl-tests' busbw: BusBandwidthFactor x algbw
  Measurement measured;
};

const char* OpName(plan::CollectiveOp op);  // "allgather", "reducescatter", "allreduce"
// nccl-tests' bus bandwidth over algorithm bandwidth: (n-1)/n for all-gather and reduce-scatter,
// 2(n-1)/n for all-reduce (each element crosses a link twice, reduced then gathered).
double BusBandwidthFactor(plan::CollectiveOp op, int ranks);
const char* DtypeName(ncclDataType_t dtype);  // "float", "half", "bfloat16" (nccl-tests' names)

}  // namespace zpp::bench
