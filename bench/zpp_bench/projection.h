// zpp-bench --project: the cost model's step communication time for each configuration on a
// cluster described by flags (or a calibration JSON). A model, not a measurement.
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "costmodel/cost_model.h"
#include "log/check.h"

namespace zpp::bench {

struct ProjectionCli {
  double inter_gbps = 100;
  double intra_gbps = 2400;
  std::string calibration;  // JSON (costmodel/calibration.h); flags given win over it
  // Given on the command line only (0 = not given).
  double inter_latency_us = 0, intra_latency_us = 0;
  double quantize_gbps = 0, dequantize_gbps = 0, reduce_gbps = 0, copy_gbps = 0;
  const CLI::App* app = nullptr;
};

void AddProjectionOptions(CLI::App& app, ProjectionCli& cli);

// The model the flags describe, for nodes x gpus_per_node.
Result ModelFrom(const ProjectionCli& cli, int nodes, int gpus_per_node,
                 costmodel::ClusterModel* model);

// Prints, for each model (full size), each configuration's projected step time; `configs`
// empty: the README's table. Plain is always first (the speed-ups are against it).
Result RunProjection(const ProjectionCli& cli, int nodes, int gpus_per_node,
                     const std::vector<std::string>& models,
                     const std::vector<std::string>& configs);

}  // namespace zpp::bench
