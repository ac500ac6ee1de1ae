#include "sim/launched_world.h"

#include "config/config.h"
#include "transport/launch_env.h"
#include "transport/ucp_transport.h"

namespace zpp::sim {
namespace {

Result CheckRankCount(int launched, int layout_ranks) {
  ZPP_CHECK_ARG(layout_ranks <= 0 || launched == layout_ranks,
                "zpp-launch started %d ranks; the cluster layout has %d: the job fails with "
                "ncclInvalidArgument (give zpp-launch -n the layout's rank count)",
                launched, layout_ranks);
  return ncclSuccess;
}

}  // namespace

Result JoinLaunchedJob(LaunchedJob* out, int layout_ranks,
                       transport::UcpTransport::Placement placement) {
  transport::LaunchInfo launch;
  ZPP_CHECK(transport::ReadLaunchInfo(&launch));
  // Before any UCP endpoint exists: a rank that stops here cannot leave a peer that is still
  // wiring up to it with a UCX error on its stderr.
  ZPP_CHECK(CheckRankCount(launch.size, layout_ranks));
  const std::chrono::milliseconds timeout = std::chrono::seconds(GetConfig().timeout);
  std::unique_ptr<transport::UcpTransport> transport;
  ZPP_CHECK(transport::UcpTransport::Create(launch, timeout, &transport, placement));
  out->rank = launch.rank;
  out->size = launch.size;
  out->transport = std::move(transport);
  return ncclSuccess;
}

Result WorldOf(const LaunchedJob& job, ClusterLayout layout, std::unique_ptr<SimWorld>* out) {
  ZPP_CHECK(CheckRankCount(job.size, layout.world_size()));
  *out = std::make_unique<SimWorld>(std::move(layout), job.rank, job.transport);
  return ncclSuccess;
}

}  // namespace zpp::sim
