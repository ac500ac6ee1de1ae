// A communicator's topology end to end: this rank's record, the exchange, the grouping, the log.
// The plugin calls it once per communicator at set-up, the CPU simulation once per simulated
// communicator.
#pragma once

#include <cstdint>

#include "config/config.h"
#include "log/check.h"
#include "topology/byte_all_gather.h"
#include "topology/host_identity.h"
#include "topology/local_picture.h"
#include "topology/topology.h"

namespace zpp::topology {

// What this rank knows about itself before talking to the others.
struct LocalFacts {
  HostIdentity host;
  LocalPicture picture;   // may be empty (hwloc failed or was not asked)
  int local_device = -1;  // CUDA ordinal; -1: none
};

// Resolves this rank's rack (config, then `env`), exchanges one RankRecord per rank over
// `exchange` and builds the Topology, then logs its findings (LogFindings).
//
// The exchange always happens exactly once, whatever went wrong locally: a rank that skipped it
// would leave the others waiting. Records that cannot be read give FallbackTopology (hierarchical
// plans off). Only a failed exchange is an error: then the ranks may not agree on anything, and
// the caller must pass the communicator's calls through to NCCL.
Result DiscoverTopology(const Config& config, const config::EnvLookup& env, const LocalFacts& local,
                        ByteAllGather& exchange, Topology* topology);

// The launcher's global rank of this process (torchrun's and DeepSpeed's RANK), -1 when unset or
// not a number. ZPP_LOCAL_SIZE numbers simulated nodes by it, so that every communicator of a
// process, sub-communicators included, places the process on the same node.
int64_t LauncherRank(const config::EnvLookup& env);

// Logs the findings once per communicator: on `rank` 0 input problems are WARNs, shapes that
// rule out hierarchical plans are WARNs when `hierarchy_requested` (hpZ or qgZ on) and INFO
// otherwise, notes INFO. Other ranks log them at TRACE, so a job's log has them once.
void LogFindings(const Topology& topology, int rank, bool hierarchy_requested);

}  // namespace zpp::topology
