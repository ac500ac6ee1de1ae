#include "bench/zpp_bench/collective_runner.h"

#include <algorithm>

#include "bench/zpp_bench/nccl_runner.h"
#include "bench/zpp_bench/sim_runner.h"
#include "log/log.h"

namespace zpp::bench {

Result MakeRunner(const RunnerOptions& options, std::unique_ptr<CollectiveRunner>* out) {
  if (options.backend == "sim") {
    *out = std::make_unique<SimRunner>(options.layout);
    return ncclSuccess;
  }
  if (options.backend == "nccl") {
    NcclRunnerOptions nccl;
    nccl.rank = options.rank;
    nccl.ranks = options.layout.world_size();
    nccl.local_size = options.layout.world_size() / std::max(1, options.layout.node_count());
    nccl.dir = options.dir;
    return MakeNcclRunner(nccl, out);
  }
  ZPP_WARN("zpp-bench: unknown backend '%s' (sim, nccl)", options.backend.c_str());
  return ncclInvalidArgument;
}

}  // namespace zpp::bench
