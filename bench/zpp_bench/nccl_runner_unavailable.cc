// zpp-bench built without CUDA: the GPU runner is not there, and says so.
#include "bench/zpp_bench/nccl_runner.h"
#include "log/log.h"

namespace zpp::bench {

Result MakeNcclRunner(const NcclRunnerOptions&, std::unique_ptr<CollectiveRunner>*) {
  ZPP_WARN(
      "zpp-bench: --backend nccl needs a build with CUDA (ZPP_ENABLE_CUDA=ON) and a GPU; use "
      "--backend sim for the simulated cluster");
  return ncclInvalidUsage;
}

}  // namespace zpp::bench
