// zpp-bench's GPU runner: this process is one rank of a job over real NCCL (ranks as processes,
// on one machine with NCCL_HOSTID per rank, or under mpirun/torchrun on a cluster). Plain NCCL
// and each zpp mode run on the same communicator in the same run: `nccl` calls the real NCCL,
// the others an engine on the cuda_nccl backend, set up once per mode. Times are CUDA-event
// medians on this rank's stream; errors are this rank's output against the fp64 reference;
// bytes are the cost model's prediction for the plan (predicted_bytes.h; the sim counts them
// exactly).
#pragma once

#include <memory>
#include <string>

#include "bench/zpp_bench/collective_runner.h"

namespace zpp::bench {

struct NcclRunnerOptions {
  int rank = 0;
  int ranks = 1;
  int local_size = 1;  // ranks per node for the report; zpp's own grouping is ZPP_LOCAL_SIZE's
  std::string dir;     // a folder every rank sees: rank 0 leaves the NCCL id there
};

// In builds without CUDA: ncclInvalidUsage with a WARN.
Result MakeNcclRunner(const NcclRunnerOptions& options, std::unique_ptr<CollectiveRunner>* out);

}  // namespace zpp::bench
