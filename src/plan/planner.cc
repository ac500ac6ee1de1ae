#include "plan/planner.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "config/config.h"
#include "kernels/math/nccl_types.h"
#include "zpp/format.h"

namespace zpp::plan {
namespace {

Plan PassThrough(zppPassThroughReason_t reason, uint64_t plain_off_node_bytes) {
  Plan plan;
  plan.reason = reason;
  plan.off_node_bytes = plain_off_node_bytes;
  plan.plain_off_node_bytes = plain_off_node_bytes;
  return plan;
}

uint64_t PieceBytes(uint64_t count, ncclDataType_t dtype, int bits, int block) {
  return zppPieceBytes(count, dtype, bits, block);
}

// Why a technique that needs the node hierarchy has none here: a communicator inside one node
// (by design, as HSDP's shard groups) or nodes the hierarchy cannot use.
zppPassThroughReason_t NoHierarchy(const Shape& shape) {
  return shape.nodes <= 1 ? zppReasonOneNode : zppReasonTopology;
}

Plan PlanAllGather(const Call& call, const Shape& shape, const Settings& s, const HpzState& hpz,
                   uint64_t shard_bytes, uint64_t plain) {
  if (!s.qwz && !s.hpz) return PassThrough(zppReasonDisabled, plain);
  // One node: quantized weights would save no inter-node byte, only add error.
  if (shape.nodes <= 1 && !s.lossy_on_one_node) return PassThrough(zppReasonOneNode, plain);
  const uint64_t remote_nodes = static_cast<uint64_t>(shape.nodes - 1);
  const uint64_t piece = PieceBytes(call.count, call.dtype, s.qwz_bits, s.block);
  Plan plan;
  plan.plain_off_node_bytes = plain;
  plan.block = s.block;
  plan.rotate = s.qwz && s.qwz_rotate;
  if (s.hpz && shape.hierarchical_allowed) {
    plan.bits_inter = s.qwz ? s.qwz_bits : 0;  // the kept partition holds pieces with qwZ
    if (s.qwz_delta) {
      // The kept partition holds the references, in the weights' dtype.
      plan.delta_bits = s.qwz_delta_bits;
      plan.send_bits = plan.bits_inter;
      plan.bits_inter = 0;
    }
    if (hpz.hit) {
      plan.kind = PlanKind::kHpzHitAllGather;
      plan.off_node_bytes = 0;
      return plan;
    }
    plan.kind = PlanKind::kHierarchicalAllGather;
    plan.off_node_bytes = remote_nodes * (s.qwz ? piece : shard_bytes);
    if (plan.off_node_bytes > plain) return PassThrough(zppReasonSmall, plain);
    return plan;
  }
  if (!s.qwz) return PassThrough(NoHierarchy(shape), plain);  // hpZ alone needs the hierarchy
  plan.kind = PlanKind::kQwzFlatAllGather;
  plan.bits_inter = s.qwz_bits;
  plan.bits_intra = s.qwz_bits;
  plan.off_node_bytes = remote_nodes * piece;
  // Tiny shards (under ZPP_MIN_BYTES=0) can be smaller than their padded piece.
  if (plan.off_node_bytes > plain) return PassThrough(zppReasonSmall, plain);
  return plan;
}

Plan PlanReduceScatter(const Call& call, const Shape& shape, const Settings& s, uint64_t plain) {
  if (call.reduction != Reduction::kSum && call.reduction != Reduction::kAvg &&
      call.reduction != Reduction::kPreMulSum) {
    return PassThrough(zppReasonRedOp, plain);
  }
  if (!s.qgz) return PassThrough(zppReasonDisabled, plain);
  if (shape.nodes <= 1 && !s.lossy_on_one_node) return PassThrough(zppReasonOneNode, plain);
  Plan plan;
  plan.plain_off_node_bytes = plain;
  plan.block = s.block;
  plan.bits_intra = s.qgz_bits_intra;
  plan.bits_inter = s.qgz_bits_inter;
  const uint64_t chunk_piece = PieceBytes(call.count, call.dtype, s.qgz_bits_inter, s.block);
  if (shape.hierarchical_allowed && shape.rack_level_allowed) {
    // Inside a rack each rank sends, to each other node, the partial sums for that node's
    // position in every rack; then one chunk to each other rack.
    const uint64_t racks = static_cast<uint64_t>(shape.racks);
    const uint64_t in_rack = racks * chunk_piece;
    plan.kind = PlanKind::kQgzThreeLevelReduceScatter;
    plan.off_node_bytes =
        static_cast<uint64_t>(shape.nodes_per_rack - 1) * in_rack + (racks - 1) * chunk_piece;
  } else if (shape.hierarchical_allowed) {
    // Each rank's partial sums cross nodes once: one chunk to each other node.
    plan.kind = PlanKind::kQgzHierarchicalReduceScatter;
    plan.off_node_bytes = static_cast<uint64_t>(shape.nodes - 1) * chunk_piece;
  } else {
    // Flat: every remote rank gets its chunk from every rank directly.
    plan.kind = PlanKind::kQgzFlatReduceScatter;
    plan.bits_intra = s.qgz_bits_inter;
    plan.off_node_bytes = static_cast<uint64_t>(shape.world - shape.min_local_size) * chunk_piece;
  }
  // A quantized plan must not move more over the slow links than the ring it replaces: a flat
  // int4 all-to-all with 8 ranks per node sends twice plain's bytes (the topology's fault), and
  // a tiny chunk can be smaller than its padded piece (the size's).
  if (plan.off_node_bytes > plain) {
    return PassThrough(
        plan.kind == PlanKind::kQgzFlatReduceScatter ? NoHierarchy(shape) : zppReasonSmall, plain);
  }
  return plan;
}

// The all-reduce of `count` elements: each rank's 1/world share (padded up) crosses nodes twice,
// once summed toward its owner and once on the way back, as NCCL's hierarchical algorithms do;
// plain NCCL's figure is the same at full width.
Plan PlanAllReduce(const Call& call, const Shape& shape, const Settings& s, uint64_t plain) {
  if (call.reduction != Reduction::kSum && call.reduction != Reduction::kAvg &&
      call.reduction != Reduction::kPreMulSum) {
    return PassThrough(zppReasonRedOp, plain);
  }
  if (!s.qar) return PassThrough(zppReasonDisabled, plain);
  // One rank on each of several nodes (HSDP's replicate groups, one GPU per node): no intra-node
  // stage, and every rank is its own node.
  const bool one_per_node = shape.nodes > 1 && shape.world == shape.nodes;
  if (!shape.hierarchical_allowed && !one_per_node) return PassThrough(NoHierarchy(shape), plain);
  Plan plan;
  plan.kind = one_per_node ? PlanKind::kQarFlatAllReduce : PlanKind::kQarHierarchicalAllReduce;
  plan.plain_off_node_bytes = plain;
  plan.block = s.block;
  plan.bits_inter = s.qar_bits;
  // int4 takes the rotation for gradients' heavy tails, except under error feedback, whose
  // kernel keeps unrotated residuals (the residual then carries what the tails lose).
  plan.rotate = s.qar_bits == 4 && !s.qar_ef;
  const uint64_t share = AllReduceShare(call.count, shape.world);
  plan.off_node_bytes = 2 * static_cast<uint64_t>(shape.nodes - 1) *
                        PieceBytes(share, call.dtype, s.qar_bits, s.block);
  if (plan.off_node_bytes > plain) return PassThrough(zppReasonSmall, plain);
  return plan;
}

}  // namespace

std::string_view PlanKindName(PlanKind kind) {
  static constexpr std::string_view kNames[] = {ZPP_PLAN_KINDS(ZPP_ENUM_NAME)};
  return NameIn(kNames, kind, "?");
}

std::string DtypeName(ncclDataType_t dtype) {
  // NCCL's values: ncclInt8 = 0 ... ncclBfloat16 = 9, then the fp8 types (2.19 and later).
  constexpr const char* kNames[] = {"int8", "uint8", "int32", "uint32", "int64",   "uint64",
                                    "fp16", "fp32",  "fp64",  "bf16",   "fp8e4m3", "fp8e5m2"};
  const int value = static_cast<int>(dtype);
  if (value >= 0 && value < static_cast<int>(std::size(kNames))) return kNames[value];
  return "dtype " + std::to_string(value);
}

size_t DtypeBytes(ncclDataType_t dtype) {
  const bool codec_dtype = dtype == ncclFloat32 || dtype == ncclFloat16 || dtype == ncclBfloat16;
  return codec_dtype ? NcclTypeBytes(dtype) : 0;
}

namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

uint64_t AllReduceShare(uint64_t count, int world) {
  constexpr uint64_t kRun = 32;
  return CeilDiv(CeilDiv(count, static_cast<uint64_t>(world > 0 ? world : 1)), kRun) * kRun;
}

Plan MakePlan(const Call& call, const Shape& shape, const Settings& settings, const HpzState& hpz) {
  const bool all_reduce = call.op == CollectiveOp::kAllReduce;
  // An all-reduce's dtype counts for its size even where zpp does not reduce it (integers).
  const size_t element = all_reduce ? NcclTypeBytes(call.dtype) : DtypeBytes(call.dtype);
  const uint64_t nodes_away = static_cast<uint64_t>(shape.nodes - 1);
  // Plain NCCL: each rank's shard enters every other node once (an all-reduce's share of 1/world
  // twice: reduced, then gathered).
  const uint64_t plain =
      all_reduce
          ? 2 * nodes_away * CeilDiv(call.count, static_cast<uint64_t>(std::max(shape.world, 1))) *
                element
          : nodes_away * call.count * element;
  // The whole gathered, scattered or reduced buffer.
  const uint64_t whole_bytes =
      call.count * element * (all_reduce ? 1 : static_cast<uint64_t>(shape.world));
  if (shape.world <= 1) return PassThrough(zppReasonOneRank, plain);
  if (DtypeBytes(call.dtype) == 0) return PassThrough(zppReasonDtype, plain);
  if (!shape.config_agreed) return PassThrough(zppReasonConfigMismatch, plain);
  if (call.count == 0 || whole_bytes < settings.min_bytes) {
    // The whole gathered (or scattered) buffer is what ZPP_MIN_BYTES compares with.
    if (call.op != CollectiveOp::kAllGather && call.reduction == Reduction::kOther) {
      return PassThrough(zppReasonRedOp, plain);
    }
    return PassThrough(zppReasonSmall, plain);
  }
  if (call.op == CollectiveOp::kAllGather) {
    return PlanAllGather(call, shape, settings, hpz, call.count * element, plain);
  }
  if (all_reduce) return PlanAllReduce(call, shape, settings, plain);
  return PlanReduceScatter(call, shape, settings, plain);
}

Settings SettingsFrom(const Config& config) {
  Settings s;
  s.qwz = config.qwz != 0;
  s.qwz_bits = static_cast<int>(config.qwz_bits);
  s.qwz_rotate = config.qwz_rotate != 0;
  s.qwz_delta = config.qwz_delta != 0;
  s.qwz_delta_bits = static_cast<int>(config.qwz_delta_bits);
  s.hpz = config.hpz != 0;
  s.qgz = config.qgz != 0;
  s.qgz_bits_intra = static_cast<int>(config.qgz_bits_intra);
  s.qgz_bits_inter = static_cast<int>(config.qgz_bits_inter);
  s.qgz_ef = config.qgz_ef != 0;
  s.qar = config.qar != 0;
  s.qar_bits = static_cast<int>(config.qar_bits);
  s.qar_ef = config.qar_ef != 0;
  s.block = static_cast<int>(config.block);
  s.min_bytes = static_cast<uint64_t>(config.min_bytes);
  s.lossy_on_one_node = config.lossy_one_node != 0;
  return s;
}

}  // namespace zpp::plan
