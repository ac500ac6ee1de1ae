// What the planner decides for one collective call, and what it needs to decide it. Every
// input is identical on all ranks of a communicator (contract 3): the call's count, dtype and
// op, the agreed configuration, the topology every rank computed from the same records, and the
// agreed hpZ state. Never a pointer.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/enum_names.h"
#include "zpp/zpp.h"

namespace zpp::plan {

enum class CollectiveOp { kAllGather, kReduceScatter, kAllReduce };

// The reduction, as far as zpp cares: NCCL's built-in sum and avg, and the pre-multiplied sums
// that ncclRedOpCreatePreMulSum makes (FSDP uses them). Everything else passes through.
enum class Reduction { kNone, kSum, kAvg, kPreMulSum, kOther };

struct Call {
  CollectiveOp op = CollectiveOp::kAllGather;
  // Elements per rank: sendcount (all-gather), recvcount (reduce-scatter), count (all-reduce).
  uint64_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  Reduction reduction = Reduction::kNone;
};

// The communicator's shape, from its topology.
struct Shape {
  int world = 1;
  int nodes = 1;
  int min_local_size = 1;  // fewest ranks on a node (all equal when uniform)
  int racks = 1;
  int nodes_per_rack = 1;
  bool hierarchical_allowed = false;  // uniform, contiguous nodes, more than one of each level
  bool rack_level_allowed = false;    // and uniform, contiguous racks, more than one
  bool config_agreed = true;          // every rank runs with the same zpp configuration
};

struct Settings {
  bool qwz = false;
  int qwz_bits = 8;
  bool qwz_rotate = false;
  bool qwz_delta = false;  // with hpZ: the inter-node stage sends deltas (engine/weight_deltas.h)
  int qwz_delta_bits = 4;
  bool hpz = false;
  bool qgz = false;
  int qgz_bits_intra = 8;
  int qgz_bits_inter = 4;
  bool qgz_ef = false;  // the engine keeps the inter-node stage's residuals (engine/step_slots.h)
  bool qar = false;     // the compressed hierarchical all-reduce (ZPP_QAR)
  int qar_bits = 8;
  bool qar_ef = false;  // the engine keeps the all-reduce's residuals (engine/step_slots.h)
  int block = 256;
  uint64_t min_bytes = 1 << 20;
  // ZPP_LOSSY_ONE_NODE: quantize on one node too, where nothing crosses a node (tests).
  bool lossy_on_one_node = false;
};

// The hpZ state every rank agreed on for this call's all-gather key.
struct HpzState {
  bool hit = false;  // a valid secondary partition of this key exists in this epoch on all ranks
};

// Each plan and its name in log lines and stats. kQgzHierarchicalReduceScatter: intra-node
// all-to-all, reduce and requantize, inter-node all-to-all, dequantize-reduce; the three-level
// one adds an inter-node-in-rack and an inter-rack stage. kQarHierarchicalAllReduce: intra-node
// reduce-scatter, quantized reduce-scatter and all-gather across nodes, intra-node all-gather;
// kQarFlatAllReduce: one rank per node (HSDP's replica groups), the quantized stages over all.
#define ZPP_PLAN_KINDS(X)                                                                       \
  X(kPassThrough, "pass-through")                     /* the real NCCL call */                  \
  X(kQwzFlatAllGather, "qwz-flat-allgather")          /* quantize, gather pieces, dequantize */ \
  X(kHierarchicalAllGather, "hierarchical-allgather") /* inter-node, then intra-node gather */  \
  X(kHpzHitAllGather, "hpz-hit-allgather")            /* intra-node gather of the kept part */  \
  X(kQgzFlatReduceScatter, "qgz-flat-reducescatter")  /* quantize, all-to-all, reduce */        \
  X(kQgzHierarchicalReduceScatter, "qgz-hierarchical-reducescatter")                            \
  X(kQgzThreeLevelReduceScatter, "qgz-three-level-reducescatter")                               \
  X(kQarHierarchicalAllReduce, "qar-hierarchical-allreduce")                                    \
  X(kQarFlatAllReduce, "qar-flat-allreduce")
enum class PlanKind { ZPP_PLAN_KINDS(ZPP_ENUMERATOR) };

std::string_view PlanKindName(PlanKind kind);

struct Plan {
  PlanKind kind = PlanKind::kPassThrough;
  zppPassThroughReason_t reason = zppReasonDisabled;  // for kPassThrough
  int bits_intra = 0;                                 // 0: that stage is not quantized
  int bits_inter = 0;
  int block = 0;
  bool rotate = false;  // qwZ pieces: Hadamard-rotated before quantizing (same size)
  // Delta plans (ZPP_QWZ_DELTA): the kept partition holds the references (bits_inter 0); the
  // inter-node stage sends a delta at delta_bits, or a full send at send_bits (0: exact).
  int delta_bits = 0;
  int send_bits = 0;
  // Bytes one rank sends off its node for this call (the busiest rank where nodes differ),
  // under this plan and under plain NCCL's ring, so that no plan moves more than plain.
  uint64_t off_node_bytes = 0;
  uint64_t plain_off_node_bytes = 0;
};

size_t DtypeBytes(ncclDataType_t dtype);  // 0 for a dtype zpp does not handle
// "fp32", "bf16", "int8", ... ("dtype N" for a value NCCL does not define), for log lines.
std::string DtypeName(ncclDataType_t dtype);

}  // namespace zpp::plan
