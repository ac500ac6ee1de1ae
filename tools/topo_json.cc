#include "topo_json.h"

#include <string>

namespace zpp::tools {
namespace {

// Keys in the order written: a person reads the output too.
using json = nlohmann::ordered_json;

std::string KindName(topology::Finding::Kind kind) {
  switch (kind) {
    case topology::Finding::Kind::kInputProblem:
      return "input-problem";
    case topology::Finding::Kind::kShape:
      return "shape";
    case topology::Finding::Kind::kNote:
      return "note";
  }
  return "unknown";
}

json NicJson(const topology::NicInfo& nic) {
  return {{"pci", topology::FormatPciAddress(nic.pci)},
          {"name", nic.name},
          {"os_devices", nic.os_devices},
          {"numa_node", nic.numa_node}};
}

json GpuJson(const topology::GpuInfo& gpu) {
  return {{"pci", topology::FormatPciAddress(gpu.pci)},
          {"vendor_id", gpu.vendor_id},
          {"device_id", gpu.device_id},
          {"numa_node", gpu.numa_node},
          {"numa_nodes", gpu.numa_nodes},
          {"cpus", gpu.cpus},
          {"cores_near", gpu.cores_near},
          {"nearest_nics", gpu.nearest_nics},
          {"nic_path",
           gpu.nearest_nics.empty() ? json(nullptr) : json(topology::NicPathName(gpu.nic_path))}};
}

}  // namespace

json TopologyJson(const topology::Topology& topology) {
  json nodes = json::array();
  for (int n = 0; n < topology.num_nodes(); ++n) {
    const topology::NodeInfo& node = topology.nodes[static_cast<size_t>(n)];
    nodes.push_back({{"node", n}, {"host", node.host}, {"rack", node.rack}, {"ranks", node.ranks}});
  }
  json racks = json::array();
  for (int r = 0; r < topology.num_racks(); ++r) {
    const topology::RackInfo& rack = topology.racks[static_cast<size_t>(r)];
    racks.push_back({{"rack", r}, {"name", rack.name}, {"nodes", rack.nodes}});
  }
  json findings = json::array();
  for (const topology::Finding& finding : topology.findings) {
    findings.push_back({{"kind", KindName(finding.kind)}, {"text", finding.text}});
  }
  return {
      {"ranks", topology.num_ranks()},
      {"grouped_by", topology::GroupingBasisName(topology.basis)},
      {"nodes", nodes},
      {"racks", racks},
      {"uniform",
       {{"ranks_per_node", topology.ranks_per_node_uniform},
        {"nodes_per_rack", topology.nodes_per_rack_uniform}}},
      {"contiguous", {{"nodes", topology.nodes_contiguous}, {"racks", topology.racks_contiguous}}},
      {"hierarchical",
       {{"allowed", topology.hierarchical_allowed()},
        {"verdict", topology::HierarchyVerdictName(topology.hierarchy)},
        {"reason", topology.hierarchy_reason},
        {"rack_level", topology.rack_level_allowed}}},
      {"findings", findings}};
}

json MachineJson(const topology::LocalPicture& picture, const topology::HostIdentity& host,
                 const topology::RackChoice& rack, const topology::Topology& topology) {
  json gpus = json::array();
  for (const topology::GpuInfo& gpu : picture.gpus) gpus.push_back(GpuJson(gpu));
  json nics = json::array();
  for (const topology::NicInfo& nic : picture.nics) nics.push_back(NicJson(nic));
  json out = TopologyJson(topology);
  out["machine"] = {{"source", picture.source},
                    {"host", picture.host_name},
                    {"host_identity_basis", host.basis},
                    {"packages", picture.packages},
                    {"numa_nodes", picture.numa_nodes},
                    {"cores", picture.cores},
                    {"pus", picture.pus},
                    {"gpus", gpus},
                    {"nics", nics},
                    {"selected_gpu", picture.selected_gpu},
                    {"gpu_note", picture.gpu_note},
                    {"rack", rack.rack},
                    {"rack_source", topology::RackSourceName(rack.source)}};
  return out;
}

}  // namespace zpp::tools
