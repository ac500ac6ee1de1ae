// zpp-bench's command line (CLI11): nccl-tests' sweep flags, zpp's modes, the simulated
// cluster, step mode and the projection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace zpp::bench {

struct BenchCli {
  // The sweep (nccl-tests' flag names).
  std::string min_bytes = "8";
  std::string max_bytes = "256M";
  uint64_t step_factor = 2;
  std::vector<std::string> ops = {"allgather", "reducescatter"};
  std::vector<std::string> modes = {"plain", "qwz", "qwz+hpz", "qgz", "qwz+hpz+qgz"};
  std::vector<std::string> dtypes = {"bfloat16"};
  int warmup = 1;
  int iterations = 5;
  bool no_sweep = false;
  // zpp's settings not in the mode: default from ZPP_BLOCK and ZPP_MIN_BYTES.
  int block = 0;
  std::string zpp_min_bytes;
  // The machine.
  std::string backend = "sim";
  int nodes = 2;
  int gpus_per_node = 4;
  int racks = 1;
  // --backend nccl: this process's rank and the folder the ranks share.
  int rank = 0;
  std::string dir = ".";
  // Step mode.
  std::vector<std::string> step_models;
  std::vector<std::string> step_configs;
  int steps = 4;
  uint64_t step_elements = uint64_t{1} << 20;
  std::string step_buffers = "dedicated";  // step::InputBuffersName
  int micro_batches = 1;
  // Output.
  std::string json_path;
  // The projection (cost model); its flags are in projection_cli.h.
  bool project = false;
};

void AddSweepOptions(CLI::App& app, BenchCli& cli);

// "8", "64K", "256M", "1G" (binary multiples): bytes.
bool ParseSize(const std::string& text, uint64_t* bytes);

}  // namespace zpp::bench
