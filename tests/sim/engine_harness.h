// Runs one collective through the engine on a simulated cluster and returns what every rank
// got, the plan, and the link byte counts, for the tests to check against fp64 references.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/collective_args.h"
#include "plan/plan.h"
#include "sim/cluster_layout.h"
#include "sim/sim_world.h"

namespace zpp::test {

struct CollectiveRun {
  plan::Plan plan;  // rank 0's (all ranks must agree: checked)
  bool plans_agree = true;
  std::vector<std::vector<uint8_t>> output;  // per rank, raw bytes of the output buffer
  std::vector<std::vector<double>> input;    // per rank, the inputs as the dtype holds them
  std::vector<uint64_t> off_node_bytes;      // per rank: inter-node + inter-rack
  std::vector<uint64_t> inter_rack_bytes;
  std::vector<std::array<uint64_t, zppNumLinks>> sent_bytes;  // per rank, per link class
  uint64_t host_syncs = 0;  // by the engine (the harness's own excluded)
  int failures = 0;         // non-success results
};

struct CollectiveSpec {
  plan::CollectiveOp op = plan::CollectiveOp::kAllGather;
  size_t count = 0;  // per rank (sendcount / recvcount; an all-reduce's count)
  ncclDataType_t dtype = ncclFloat32;
  plan::Reduction reduction = plan::Reduction::kSum;
  float premul = 1.0f;
  bool premul_on_device = false;  // pass `premul` as an ncclScalarDevice
  bool in_place = false;
  uint32_t seed = 1;
  std::vector<std::pair<int, size_t>> nan_inputs;  // (rank, element): input set to NaN
};

CollectiveRun RunCollective(const sim::ClusterLayout& layout, const plan::Shape& shape,
                            const plan::Settings& settings, const CollectiveSpec& spec);
// The same on a world that may host only some ranks (a process of a zpp-launch job): the
// entries of ranks it does not host stay empty. Resets the world's byte counters first.
CollectiveRun RunCollective(sim::SimWorld& world, const plan::Shape& shape,
                            const plan::Settings& settings, const CollectiveSpec& spec);

// Settings with these techniques on (default bits) and every message eligible (min_bytes 0).
plan::Settings TechniquesOn(bool qwz, bool hpz, bool qgz);

// The engine's modes the matrix tests run (threads in tests/sim, processes in tests/mp): plain,
// qwZ int8 and int4, hpZ, qwZ int8 + hpZ, qgZ 8/4, 8/8 and 4/4; every size through its plan.
struct MatrixMode {
  std::string name;
  plan::Settings settings;
};
std::vector<MatrixMode> MatrixModes();

// Element i of a raw buffer of `dtype`, widened to double.
double ElementAt(const std::vector<uint8_t>& bytes, ncclDataType_t dtype, size_t i);

}  // namespace zpp::test
