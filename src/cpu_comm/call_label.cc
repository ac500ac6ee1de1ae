#include "cpu_comm/call_label.h"

#include <string>

#include "common/enum_names.h"
#include "common/hash.h"

namespace zpp::cpu {
namespace {

// The signature's low 3 bits; 0 is the set-up's.
enum class CallKind : uint32_t {
  kAllGather = 1,
  kReduceScatter,
  kAllGatherBytes,
  kBroadcast,
  kAllReduce,
};

// FNV-1a over the values every rank must agree on.
uint32_t Signature(CallKind kind, std::initializer_list<uint64_t> values) {
  uint64_t hash = kFnv1a64Offset;
  for (uint64_t value : values) hash = Fnv1a64Word(hash, value);
  return static_cast<uint32_t>(kind) | static_cast<uint32_t>((hash ^ (hash >> 32)) << 3);
}

const char* ReductionName(plan::Reduction reduction) {
  using enum plan::Reduction;
  static constexpr NamedValue<plan::Reduction> kNames[] = {
      {kSum, "sum"}, {kAvg, "avg"}, {kPreMulSum, "premul_sum"}};
  return NameIn(kNames, reduction, "other").data();  // literals: end in '\0'
}

transport::CallLabel Label(uint64_t number, uint32_t signature, std::string description) {
  return {number, signature, std::move(description)};
}

}  // namespace

transport::CallLabel AllGatherLabel(uint64_t number, const engine::AllGatherArgs& args) {
  return Label(number, Signature(CallKind::kAllGather, {args.count, uint64_t(args.dtype)}),
               "all_gather of " + std::to_string(args.count) + " x " + plan::DtypeName(args.dtype) +
                   " per rank");
}

transport::CallLabel ReduceScatterLabel(uint64_t number, const engine::ReduceScatterArgs& args) {
  return Label(number,
               Signature(CallKind::kReduceScatter,
                         {args.count, uint64_t(args.dtype), uint64_t(args.reduction)}),
               "reduce_scatter (" + std::string(ReductionName(args.reduction)) + ") of " +
                   std::to_string(args.count) + " x " + plan::DtypeName(args.dtype) + " per rank");
}

transport::CallLabel AllReduceLabel(uint64_t number, const engine::AllReduceArgs& args) {
  return Label(
      number,
      Signature(CallKind::kAllReduce, {args.count, uint64_t(args.dtype), uint64_t(args.reduction)}),
      "all_reduce (" + std::string(ReductionName(args.reduction)) + ") of " +
          std::to_string(args.count) + " x " + plan::DtypeName(args.dtype));
}

transport::CallLabel AllGatherBytesLabel(uint64_t number, size_t bytes) {
  return Label(number, Signature(CallKind::kAllGatherBytes, {bytes}),
               "exact all-gather of " + std::to_string(bytes) +
                   " bytes per rank (all_reduce, barrier or another exact collective)");
}

transport::CallLabel BroadcastLabel(uint64_t number, size_t bytes, int root) {
  return Label(
      number, Signature(CallKind::kBroadcast, {bytes, uint64_t(root)}),
      "broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root));
}

}  // namespace zpp::cpu
