#include "bench/zpp_bench/bench_types.h"

namespace zpp::bench {

const char* OpName(plan::CollectiveOp op) {
  return op == plan::CollectiveOp::kAllGather ? "allgather" : "reducescatter";
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
