// What zpp-launch tells each rank it starts, through the environment (as torchrun's RANK and
// MASTER_ADDR): its rank, the number of ranks and where the bootstrap listens. These variables
// belong to the launcher's protocol, not to zpp's configuration: the launcher writes them, only
// ReadLaunchInfo reads them, and no user sets them.
#pragma once

#include <string>

#include "log/check.h"

namespace zpp::transport {

inline constexpr char kLaunchRankEnv[] = "ZPP_LAUNCH_RANK";
inline constexpr char kLaunchSizeEnv[] = "ZPP_LAUNCH_SIZE";
inline constexpr char kLaunchBootstrapEnv[] = "ZPP_LAUNCH_BOOTSTRAP";  // 127.0.0.1:PORT

struct LaunchInfo {
  int rank = 0;
  int size = 0;
  std::string bootstrap;
};

// ncclInvalidUsage (and a WARN) when this process was not started by zpp-launch.
Result ReadLaunchInfo(LaunchInfo* out);

}  // namespace zpp::transport
