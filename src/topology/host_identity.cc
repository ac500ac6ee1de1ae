#include "topology/host_identity.h"

#include <unistd.h>

#include <cstdio>

#include "common/hash.h"
#include "common/text.h"

namespace zpp::topology {
namespace {

std::string ReadBootId() {
  FILE* file = std::fopen("/proc/sys/kernel/random/boot_id", "r");
  if (file == nullptr) return "";
  char buffer[128] = {};
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, file);
  std::fclose(file);
  return std::string(text::Trim(std::string_view(buffer, n)));
}

}  // namespace

HostIdentity DiscoverHostIdentity(const config::EnvLookup& env) {
  HostIdentity identity;
  char host[256] = {};
  identity.name = gethostname(host, sizeof(host) - 1) == 0 ? host : "unknown";
  const std::optional<std::string> host_id = env("NCCL_HOSTID");
  if (host_id && !text::Trim(*host_id).empty()) {
    identity.hash = Fnv1a64(text::Trim(*host_id));
    identity.basis = "NCCL_HOSTID";
    return identity;
  }
  // Two containers on one machine share the boot id but not the host name; two machines cloned
  // from one image share the host name only by mistake, and never the boot id.
  identity.hash = Fnv1a64(identity.name + ReadBootId());
  identity.basis = "hostname+boot_id";
  return identity;
}

}  // namespace zpp::topology
