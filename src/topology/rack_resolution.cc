#include "topology/rack_resolution.h"

#include "config/rack_token.h"
#include "log/log.h"
#include "topology/printable.h"
#include "topology/slurm_topology.h"
#include "topology/topo_file.h"

namespace zpp::topology {
namespace {

// A file with hundreds of bad lines should not flood the log: the first few tell the story.
constexpr size_t kMaxErrorLines = 5;

RackChoice FromTopoFile(const std::string& path, std::string_view host_name) {
  const TopoFileParse parsed = LoadTopoFile(path);
  if (!parsed.file) {
    for (size_t i = 0; i < parsed.errors.size() && i < kMaxErrorLines; ++i) {
      ZPP_WARN("ZPP_TOPO_FILE %s", parsed.errors[i].c_str());
    }
    if (parsed.errors.size() > kMaxErrorLines) {
      ZPP_WARN("ZPP_TOPO_FILE %s: %zu more errors", path.c_str(),
               parsed.errors.size() - kMaxErrorLines);
    }
    ZPP_WARN(
        "ZPP_TOPO_FILE %s is unusable; zpp treats the job as one rack (fix the lines above, or "
        "unset ZPP_TOPO_FILE)",
        path.c_str());
    return {};
  }
  const TopoFileEntry* entry = parsed.file->Find(host_name);
  if (entry == nullptr) {
    ZPP_WARN(
        "ZPP_TOPO_FILE %s does not list host '%.*s'; zpp treats the job as one rack (add a "
        "'hostname rack' line for it, or set ZPP_RACK_ID on it)",
        path.c_str(), static_cast<int>(host_name.size()), host_name.data());
    return {};
  }
  ZPP_INFO(kTopo, "rack '%s' for host '%.*s' from ZPP_TOPO_FILE %s:%d", entry->rack.c_str(),
           static_cast<int>(host_name.size()), host_name.data(), path.c_str(), entry->line);
  return {entry->rack, RackSource::kTopoFile};
}

RackChoice FromSlurm(const std::string& raw_addr, const std::optional<std::string>& pattern) {
  std::optional<std::string_view> pattern_view;
  if (pattern) pattern_view = *pattern;
  const SlurmRack slurm = RackFromSlurmTopologyAddr(raw_addr, pattern_view);
  const std::string addr = Printable(raw_addr, 200);
  if (!slurm.problem.empty()) {
    ZPP_WARN(
        "SLURM_TOPOLOGY_ADDR=\"%s\" %s; zpp treats the job as one rack (set ZPP_RACK_ID or "
        "ZPP_TOPO_FILE to give the racks)",
        addr.c_str(), slurm.problem.c_str());
    return {};
  }
  if (!slurm.rack) {
    ZPP_INFO(kTopo, "SLURM_TOPOLOGY_ADDR=\"%s\" has no switch above the node; one rack",
             addr.c_str());
    return {};
  }
  ZPP_INFO(kTopo, "rack '%s' from SLURM_TOPOLOGY_ADDR=\"%s\"", slurm.rack->c_str(), addr.c_str());
  return {*slurm.rack, RackSource::kSlurm};
}

}  // namespace

std::string_view RackSourceName(RackSource source) {
  static constexpr std::string_view kNames[] = {ZPP_RACK_SOURCES(ZPP_ENUM_NAME)};
  return NameIn(kNames, source, "unknown");
}

RackChoice ResolveRack(const Config& config, const config::EnvLookup& env,
                       std::string_view host_name) {
  // The config parser has already rejected (with a WARN) a ZPP_RACK_ID that is not a token.
  if (!config.rack_id.empty() && config::IsValidRackToken(config.rack_id)) {
    ZPP_INFO(kTopo, "rack '%s' from ZPP_RACK_ID", config.rack_id.c_str());
    return {config.rack_id, RackSource::kEnv};
  }
  if (!config.topo_file.empty()) return FromTopoFile(config.topo_file, host_name);
  const std::optional<std::string> addr = env("SLURM_TOPOLOGY_ADDR");
  if (addr && !addr->empty()) return FromSlurm(*addr, env("SLURM_TOPOLOGY_ADDR_PATTERN"));
  ZPP_INFO(kTopo, "no rack id (ZPP_RACK_ID, ZPP_TOPO_FILE, SLURM_TOPOLOGY_ADDR unset); one rack");
  return {};
}

}  // namespace zpp::topology
