// Which host a rank runs on, as a hash all ranks can compare. zpp groups ranks into nodes the
// way NCCL does, so that zpp's "node" is the set of ranks NCCL connects through NVLink or shared
// memory: NCCL_HOSTID when set, else the host name and the kernel's boot id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"

namespace zpp::topology {

struct HostIdentity {
  std::string name;   // gethostname()
  uint64_t hash = 0;  // equal on two ranks exactly when they share a host
  std::string basis;  // what was hashed, for the log ("NCCL_HOSTID", "hostname+boot_id")
};

// Reads NCCL_HOSTID through `env`, the host name and /proc/sys/kernel/random/boot_id.
HostIdentity DiscoverHostIdentity(const config::EnvLookup& env);

}  // namespace zpp::topology
