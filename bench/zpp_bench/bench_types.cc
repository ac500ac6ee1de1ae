#include "bench/zpp_bench/bench_types.h"

namespace zpp::bench {

const char* OpName(plan::CollectiveOp op) {
  switch (op) {
    case plan::CollectiveOp::kAllGather:
      return "allgather";
    case plan::CollectiveOp::kReduceScatter:
      return "reducescatter";
    case plan::CollectiveOp::kAllReduce:
      return "allreduce";
  }
  return "?";
}

double BusBandwidthFactor(plan::CollectiveOp op, int ranks) {
  const double n = ranks;
  return (op == plan::CollectiveOp::kAllReduce ? 2.0 : 1.0) * (n - 1) / n;
}

const char* DtypeName(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat32:
      return "float";
    case ncclFloat16:
      return "half";
    case ncclBfloat16:
      return "bfloat16";
    default:
      return "?";
  }
}

}  // namespace zpp::bench
