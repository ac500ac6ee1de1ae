// The seam between zpp-bench's sweep and the machine it measures: a runner runs one collective
// case and reports its time, bytes per link class and error. The sim runner (a simulated
// cluster, ranks as threads) is here; a GPU runner (ranks as processes over real NCCL, the
// plugin's cuda_nccl backend) implements the same interface and registers in MakeRunner.
#pragma once

#include <memory>
#include <string>

#include "bench/zpp_bench/bench_types.h"
#include "log/check.h"
#include "sim/cluster_layout.h"

namespace zpp::bench {

class CollectiveRunner {
 public:
  virtual ~CollectiveRunner() = default;
  virtual Result Run(const CollectiveCase& what, Measurement* out) = 0;
  virtual int world_size() const = 0;
  // For the report: "sim", "nccl"; the machine; NCCL's version ("none" when not linked).
  virtual std::string backend() const = 0;
  virtual std::string machine() const = 0;
  virtual std::string nccl_version() const = 0;
  // What the time column means here (sim: CPU time of a simulation, not a network's).
  virtual std::string time_note() const = 0;
};

struct RunnerOptions {
  std::string backend = "sim";
  sim::ClusterLayout layout;  // the cluster (the sim's; for nccl, what the report says)
  int rank = 0;               // nccl: this process's rank of layout.world_size()
  std::string dir;            // nccl: a folder every rank sees (the NCCL id)
};

// "sim", or "nccl" (a build with CUDA, on a GPU; this process is one rank).
Result MakeRunner(const RunnerOptions& options, std::unique_ptr<CollectiveRunner>* out);

}  // namespace zpp::bench
