// This process's part of a zpp-launch job: its rank, and the UCP transport to the other ranks'
// processes. A job can hold several simulated worlds one after the other (each a layout of the
// job's ranks) on the one transport: UCP matches tagged messages in the order each rank sent
// them, so a new world's calls never meet an earlier world's.
#pragma once

#include <memory>

#include "log/check.h"
#include "sim/sim_world.h"
#include "transport/ucp_transport.h"

namespace zpp::sim {

struct LaunchedJob {
  int rank = 0;
  int size = 0;
  std::shared_ptr<transport::Transport> transport;
};

// Bootstraps through zpp-launch; ZPP_TIMEOUT bounds every wait. ncclInvalidUsage when this
// process was not started by zpp-launch; ncclInvalidArgument, before any connection is made,
// when `layout_ranks` (0: any) is not the number of ranks zpp-launch started.
Result JoinLaunchedJob(
    LaunchedJob* out, int layout_ranks = 0,
    transport::UcpTransport::Placement placement = transport::UcpTransport::Placement::kAsFound);

// A world of `layout` hosting this process's rank; ncclInvalidArgument when the layout's size
// is not the job's.
Result WorldOf(const LaunchedJob& job, ClusterLayout layout, std::unique_ptr<SimWorld>* out);

}  // namespace zpp::sim
