// The sim backend's runner: each case on a fresh simulated cluster (ranks as threads, the CPU
// codec as their kernels). Bytes per link class are exact; times are the CPU time of the
// simulation on this machine, not a network's.
#pragma once

#include "bench/zpp_bench/collective_runner.h"

namespace zpp::bench {

class SimRunner final : public CollectiveRunner {
 public:
  explicit SimRunner(sim::ClusterLayout layout) : layout_(std::move(layout)) {}

  Result Run(const CollectiveCase& what, Measurement* out) override;
  int world_size() const override { return layout_.world_size(); }
  std::string backend() const override { return "sim"; }
  std::string machine() const override;
  std::string nccl_version() const override { return "none (sim backend)"; }
  std::string time_note() const override;

 private:
  const sim::ClusterLayout layout_;
};

}  // namespace zpp::bench
