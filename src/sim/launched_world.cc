#include "sim/launched_world.h"

#include "config/config.h"
#include "transport/launch_env.h"
#include "transport/ucp_transport.h"

namespace zpp::sim {

Result JoinLaunchedJob(LaunchedJob* out) {
  transport::LaunchInfo launch;
  ZPP_CHECK(transport::ReadLaunchInfo(&launch));
  const std::chrono::milliseconds timeout = std::chrono::seconds(GetConfig().timeout);
  std::unique_ptr<transport::UcpTransport> transport;
  ZPP_CHECK(transport::UcpTransport::Create(launch, timeout, &transport));
  out->rank = launch.rank;
  out->size = launch.size;
  out->transport = std::move(transport);
  return ncclSuccess;
}

Result WorldOf(const LaunchedJob& job, ClusterLayout layout, std::unique_ptr<SimWorld>* out) {
  ZPP_CHECK_ARG(job.size == layout.world_size(),
                "zpp-launch started %d ranks; the cluster layout has %d", job.size,
                layout.world_size());
  *out = std::make_unique<SimWorld>(std::move(layout), job.rank, job.transport);
  return ncclSuccess;
}

}  // namespace zpp::sim
