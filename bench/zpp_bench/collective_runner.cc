#include "bench/zpp_bench/collective_runner.h"

#include "bench/zpp_bench/sim_runner.h"
#include "log/log.h"

namespace zpp::bench {

Result MakeRunner(const RunnerOptions& options, std::unique_ptr<CollectiveRunner>* out) {
  if (options.backend == "sim") {
    *out = std::make_unique<SimRunner>(options.layout);
    return ncclSuccess;
  }
  if (options.backend == "nccl") {
    // The GPU runner (ranks as processes, NCCL with and without zpp's cuda_nccl backend) comes
    // with the plugin; it implements CollectiveRunner and is created here.
    ZPP_WARN(
        "zpp-bench: --backend nccl is not built yet (it needs the LD_PRELOAD plugin's cuda_nccl "
        "backend); use --backend sim for the simulated cluster");
    return ncclInvalidUsage;
  }
  ZPP_WARN("zpp-bench: unknown backend '%s' (sim, nccl)", options.backend.c_str());
  return ncclInvalidArgument;
}

}  // namespace zpp::bench
