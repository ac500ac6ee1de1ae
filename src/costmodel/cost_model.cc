#include "costmodel/cost_model.h"

#include <algorithm>

#include "kernels/math/nccl_types.h"
#include "plan/planner.h"
#include "zpp/format.h"

namespace zpp::costmodel {
namespace {

using plan::PlanKind;

// The bytes one rank contributes per peer: a piece at `bits`, or the raw elements when 0.
uint64_t Contribution(const plan::Call& call, int bits, int block) {
  if (bits == 0) return call.count * NcclTypeBytes(call.dtype);
  return zppPieceBytes(call.count, call.dtype, bits, block);
}

// An all-reduce's share: the elements each of `ranks` ranks owns, as the plan pads them.
plan::Call ShareOf(const plan::Call& call, uint64_t ranks) {
  plan::Call share = call;
  share.count = plan::AllReduceShare(call.count, static_cast<int>(ranks));
  return share;
}

double Seconds(double bytes, double gbytes_per_s) {
  return gbytes_per_s > 0 ? bytes / (gbytes_per_s * 1e9) : 0;
}

double LinkSeconds(double bytes, const LinkLevel& level) {
  return level.gbps > 0 ? bytes * 8 / (level.gbps * 1e9) : 0;
}

}  // namespace

ClusterModel DefaultModel(int nodes, int gpus_per_node, double intra_gbps, double inter_gbps) {
  ClusterModel model;
  model.nodes = nodes;
  model.gpus_per_node = gpus_per_node;
  model.intra = {intra_gbps, 2.0};
  model.inter = {inter_gbps, 5.0};
  model.kernels = {1000, 1000, 1000, 2000};
  return model;
}

RankBytes BytesOf(const plan::Plan& plan, const plan::Call& call, int nodes, int gpus_per_node) {
  const uint64_t n = static_cast<uint64_t>(nodes);
  const uint64_t g = static_cast<uint64_t>(gpus_per_node);
  const uint64_t p = n * g;
  const uint64_t raw = Contribution(call, 0, plan.block);
  RankBytes bytes;
  switch (plan.kind) {
    case PlanKind::kPassThrough:  // NCCL's ring: the shard (or chunk) to every other rank once
      if (call.op == plan::CollectiveOp::kAllReduce) {
        // Its all-reduce: each rank's 1/p share around the ring twice, reduced then gathered
        // (the planner's plain figure).
        plan::Call share = call;
        share.count = (call.count + p - 1) / p;
        const uint64_t raw_share = Contribution(share, 0, plan.block);
        bytes = {2 * (p - n) * raw_share, 2 * (n - 1) * raw_share};
      } else {
        bytes = {(p - n) * raw, (n - 1) * raw};
      }
      break;
    case PlanKind::kQwzFlatAllGather: {  // the same ring on pieces
      const uint64_t piece = Contribution(call, plan.bits_inter, plan.block);
      bytes = {(p - n) * piece, (n - 1) * piece};
      break;
    }
    case PlanKind::kHierarchicalAllGather: {  // across nodes, then the node's gather inside
      const uint64_t w = Contribution(call, plan.bits_inter, plan.block);
      bytes = {(g - 1) * n * w, (n - 1) * w};
      break;
    }
    case PlanKind::kHpzHitAllGather: {  // the kept secondary partition, inside the node only
      const uint64_t w = Contribution(call, plan.bits_inter, plan.block);
      bytes = {(g - 1) * n * w, 0};
      break;
    }
    case PlanKind::kQgzFlatReduceScatter: {  // one all-to-all of chunk pieces over all ranks
      const uint64_t piece = Contribution(call, plan.bits_inter, plan.block);
      bytes = {(g - 1) * piece, (p - g) * piece};
      break;
    }
    case PlanKind::kQgzHierarchicalReduceScatter:
    case PlanKind::kQgzThreeLevelReduceScatter: {  // (two levels only: see the header)
      const uint64_t intra = Contribution(call, plan.bits_intra, plan.block);
      const uint64_t inter = Contribution(call, plan.bits_inter, plan.block);
      bytes = {(g - 1) * n * intra, (n - 1) * inter};
      break;
    }
    case PlanKind::kQarFlatAllReduce:
    case PlanKind::kQarHierarchicalAllReduce: {  // exact inside, each share twice across
      const plan::Call share = ShareOf(call, p);
      const uint64_t raw_share = Contribution(share, 0, plan.block);
      const uint64_t piece = Contribution(share, plan.bits_inter, plan.block);
      bytes = {2 * (g - 1) * n * raw_share, 2 * (n - 1) * piece};
      break;
    }
  }
  return bytes;
}

CallTime TimeOf(const plan::Plan& plan, const plan::Call& call, const ClusterModel& model) {
  const int n = model.nodes;
  const int g = model.gpus_per_node;
  const int p = n * g;
  const RankBytes bytes = BytesOf(plan, call, n, g);
  const double node_off = static_cast<double>(bytes.off_node) * g;  // through the node's NICs
  const double gpu_intra = static_cast<double>(bytes.intra_node);
  const double raw = static_cast<double>(Contribution(call, 0, plan.block));
  const KernelThroughput& k = model.kernels;
  CallTime time;
  switch (plan.kind) {
    case PlanKind::kPassThrough:
    case PlanKind::kQwzFlatAllGather:
    case PlanKind::kQgzFlatReduceScatter: {
      const double slowest = n > 1 ? model.inter.latency_us : model.intra.latency_us;
      const int rounds = call.op == plan::CollectiveOp::kAllReduce ? 2 : 1;  // reduce, gather
      time.comm_us =
          1e6 * std::max(LinkSeconds(node_off, model.inter), LinkSeconds(gpu_intra, model.intra)) +
          rounds * (p - 1) * slowest;
      break;
    }
    default:
      time.comm_us =
          1e6 * (LinkSeconds(node_off, model.inter) + LinkSeconds(gpu_intra, model.intra)) +
          (n - 1) * model.inter.latency_us + (g - 1) * model.intra.latency_us;
      break;
  }
  const double w_inter = static_cast<double>(Contribution(call, plan.bits_inter, plan.block));
  const double w_intra = static_cast<double>(Contribution(call, plan.bits_intra, plan.block));
  double seconds = 0;
  switch (plan.kind) {
    case PlanKind::kPassThrough:
      break;
    case PlanKind::kQwzFlatAllGather:
      seconds =
          Seconds(raw + w_inter, k.quantize_gbps) + Seconds(p * (w_inter + raw), k.dequantize_gbps);
      break;
    case PlanKind::kHierarchicalAllGather:
    case PlanKind::kHpzHitAllGather:
      if (plan.bits_inter == 0) {
        seconds = Seconds(2.0 * p * raw, k.copy_gbps);
      } else {
        if (plan.kind == PlanKind::kHierarchicalAllGather) {
          seconds += Seconds(raw + w_inter, k.quantize_gbps);
        }
        seconds += Seconds(p * (w_inter + raw), k.dequantize_gbps);
      }
      break;
    case PlanKind::kQgzFlatReduceScatter:
      seconds =
          Seconds(p * (raw + w_inter), k.quantize_gbps) + Seconds(p * w_inter + raw, k.reduce_gbps);
      break;
    case PlanKind::kQgzHierarchicalReduceScatter:
    case PlanKind::kQgzThreeLevelReduceScatter:
      seconds = Seconds(p * (raw + w_intra), k.quantize_gbps) +
                Seconds(static_cast<double>(g) * n * w_intra + n * w_inter, k.reduce_gbps) +
                Seconds(n * w_inter + raw, k.reduce_gbps);
      break;
    case PlanKind::kQarFlatAllReduce:
    case PlanKind::kQarHierarchicalAllReduce: {
      const plan::Call share = ShareOf(call, static_cast<uint64_t>(p));
      const double raw_share = static_cast<double>(Contribution(share, 0, plan.block));
      const double piece = static_cast<double>(Contribution(share, plan.bits_inter, plan.block));
      seconds = Seconds(n * (raw_share + piece) + 4 * raw_share + piece, k.quantize_gbps) +
                Seconds(n * piece + 4 * raw_share, k.reduce_gbps) +
                Seconds(n * (piece + raw_share), k.dequantize_gbps);
      break;
    }
  }
  time.codec_us = 1e6 * seconds;
  return time;
}

}  // namespace zpp::costmodel
