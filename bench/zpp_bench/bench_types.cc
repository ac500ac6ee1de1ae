#include "bench/zpp_bench/bench_types.h"

#include "common/enum_names.h"

namespace zpp::bench {

const char* OpName(plan::CollectiveOp op) {
  using enum plan::CollectiveOp;
  static constexpr NamedValue<plan::CollectiveOp> kNames[] = {
      {kAllGather, "allgather"}, {kReduceScatter, "reducescatter"}, {kAllReduce, "allreduce"}};
  return NameIn(kNames, op, "?").data();  // literals: end in '\0'
}

double BusBandwidthFactor(plan::CollectiveOp op, int ranks) {
  const double n = ranks;
  return (op == plan::CollectiveOp::kAllReduce ? 2.0 : 1.0) * (n - 1) / n;
}

const char* DtypeName(ncclDataType_t dtype) {
  static constexpr NamedValue<ncclDataType_t> kNames[] = {
      {ncclFloat32, "float"}, {ncclFloat16, "half"}, {ncclBfloat16, "bfloat16"}};
  return NameIn(kNames, dtype, "?").data();  // literals: end in '\0'
}

}  // namespace zpp::bench
