// An alpha-beta model of zpp's collectives on a two-level cluster (nodes of GPUs): for each plan
// the planner can choose, the bytes each rank sends per link level (exactly what the sim
// counts), and a time: per level, latency per step plus bytes over bandwidth, and the codec
// kernels' bytes over their throughput. Pure: no I/O, no state.
//
// Time model. A ring (plain NCCL, qwZ's flat gather of pieces) and a flat all-to-all pipeline
// both levels, so the slower level bounds them: max(node's off-node bytes / inter bandwidth,
// GPU's intra-node bytes / intra bandwidth) + (steps x the slowest latency). Hierarchical plans
// run their stages one after the other: the sum. Codec kernels run between stages: their time
// is added (no overlap with communication). The inter-node bandwidth is the node's (all its
// NICs together, shared by its GPUs); the intra-node one is each GPU's.
#pragma once

#include <cstdint>

#include "plan/plan.h"

namespace zpp::costmodel {

struct LinkLevel {
  double gbps = 0;        // Gbit/s
  double latency_us = 0;  // per communication step
};

// GB/s of bytes read plus bytes written, the measure zpp-codec-bench and the GPU kernel bench
// report.
struct KernelThroughput {
  double quantize_gbps = 0;
  double dequantize_gbps = 0;
  double reduce_gbps = 0;  // dequantize-reduce(-requantize)
  double copy_gbps = 0;    // device-to-device copies (unquantized hierarchical gathers)
};

struct ClusterModel {
  int nodes = 1;
  int gpus_per_node = 1;
  LinkLevel intra;  // per GPU
  LinkLevel inter;  // per node
  KernelThroughput kernels;
};

// Defaults: the link figures are what the caller gives; the kernels' are ASSUMPTIONS (no GPU has
// measured zpp's kernels yet): 1000 GB/s for the codec kernels and 2000 GB/s for copies, about a
// third and two thirds of an H100's HBM3 bandwidth. Latencies: 2 us intra, 5 us inter.
ClusterModel DefaultModel(int nodes, int gpus_per_node, double intra_gbps, double inter_gbps);

// Bytes one rank sends per call (every rank the same under a uniform layout).
struct RankBytes {
  uint64_t intra_node = 0;
  uint64_t off_node = 0;
};

// The bytes of `plan` for `call` (count per rank) on nodes x gpus_per_node. Plans of the rack
// level (three-level qgZ) are not modelled: ClusterModel has two levels.
RankBytes BytesOf(const plan::Plan& plan, const plan::Call& call, int nodes, int gpus_per_node);

struct CallTime {
  double comm_us = 0;
  double codec_us = 0;
  double total_us() const { return comm_us + codec_us; }
};

CallTime TimeOf(const plan::Plan& plan, const plan::Call& call, const ClusterModel& model);

}  // namespace zpp::costmodel
