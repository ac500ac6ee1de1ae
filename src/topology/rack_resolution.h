// This rank's rack id, from the first source that gives one: ZPP_RACK_ID, ZPP_TOPO_FILE,
// SLURM_TOPOLOGY_ADDR. No source: no rack id, and the job is one rack.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/enum_names.h"
#include "config/config.h"

namespace zpp::topology {

#define ZPP_RACK_SOURCES(X)                                                               \
  X(kNone, "none") /* no source gave a rack (or the one that should have was unusable) */ \
  X(kEnv, "ZPP_RACK_ID")                                                                  \
  X(kTopoFile, "ZPP_TOPO_FILE")                                                           \
  X(kSlurm, "SLURM_TOPOLOGY_ADDR")
enum class RackSource : uint32_t { ZPP_RACK_SOURCES(ZPP_ENUMERATOR) };

std::string_view RackSourceName(RackSource source);

struct RackChoice {
  std::string rack;  // a valid token, or empty with source kNone
  RackSource source = RackSource::kNone;
};

// `config` has ZPP_RACK_ID and ZPP_TOPO_FILE already checked; SLURM_TOPOLOGY_ADDR (and its
// _PATTERN) are read through `env`. `host_name` is looked up in the topology file.
//
// A source that is present but unusable (the file is missing, unreadable or garbled, does not
// list this host, or SLURM's address is malformed) WARNs and gives no rack: the later sources are
// not consulted, because a rank that quietly took its rack from elsewhere could split the job
// into racks that do not exist. With no rack on some rank the grouping makes the job one rack.
RackChoice ResolveRack(const Config& config, const config::EnvLookup& env,
                       std::string_view host_name);

}  // namespace zpp::topology
