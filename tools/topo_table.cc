#include "topo_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "topology/str_cat.h"

namespace zpp::tools {
namespace {

using topology::StrCat;

// Collects rows, then pads every column to its widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  std::string Render(const std::string& indent) const {
    std::vector<size_t> widths;
    for (const auto& row : rows_) {
      widths.resize(std::max(widths.size(), row.size()));
      for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line = indent;
      for (size_t c = 0; c < row.size(); ++c) {
        line += row[c];
        if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
      }
      out += line;
      out += '\n';
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string NumaText(int numa_node, const std::string& numa_nodes) {
  if (numa_node >= 0) return std::to_string(numa_node);
  return numa_nodes.empty() ? "-" : numa_nodes;
}

std::string RackName(const topology::Topology& topology, int rack) {
  const std::string& name = topology.racks[static_cast<size_t>(rack)].name;
  return name.empty() ? "(one rack)" : name;
}

}  // namespace

std::string RangeList(const std::vector<int>& values) {
  std::string out;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(values[i]);
    if (j > i) out += StrCat("-", values[j]);
    i = j + 1;
  }
  return out;
}

std::string PictureTable(const topology::LocalPicture& picture, const topology::HostIdentity& host,
                         const topology::RackChoice& rack) {
  std::string out = StrCat("zpp-topo: ", picture.source, " (host ", picture.host_name, ")\n");
  out += StrCat("  packages ", picture.packages, ", NUMA nodes ", picture.numa_nodes, ", cores ",
                picture.cores, ", PUs ", picture.pus, "\n");
  if (picture.source == topology::kThisMachine) {  // an XML file describes another machine
    char hash[32];
    std::snprintf(hash, sizeof(hash), "%016" PRIx64, host.hash);
    out += StrCat("  host identity ", hash, " (from ", host.basis, ")\n");
  }
  out += StrCat("  rack ", rack.rack.empty() ? std::string("none: the job is one rack") : rack.rack,
                " (source ", topology::RackSourceName(rack.source), ")\n\n");

  if (picture.gpus.empty()) {
    out += StrCat("GPUs: none (", picture.gpu_note, ")\n\n");
  } else {
    // The first column marks this process's GPU, when it has one.
    const bool marked = picture.selected_gpu >= 0;
    out += "GPUs:\n";
    Table gpus({"#", "PCI", "NUMA", "cores", "CPUs", "nearest NICs", "path"});
    for (size_t g = 0; g < picture.gpus.size(); ++g) {
      const topology::GpuInfo& gpu = picture.gpus[g];
      std::string nics;
      for (int n : gpu.nearest_nics) {
        const topology::NicInfo& nic = picture.nics[static_cast<size_t>(n)];
        if (!nics.empty()) nics += ',';
        nics += nic.name.empty() ? topology::FormatPciAddress(nic.pci) : nic.name;
      }
      const std::string mark = static_cast<int>(g) == picture.selected_gpu ? "*" : " ";
      gpus.Add({marked ? StrCat(mark, g) : std::to_string(g), topology::FormatPciAddress(gpu.pci),
                NumaText(gpu.numa_node, gpu.numa_nodes), std::to_string(gpu.cores_near),
                OrDash(gpu.cpus), OrDash(nics),
                gpu.nearest_nics.empty() ? "-" : std::string(topology::NicPathName(gpu.nic_path))});
    }
    out += gpus.Render("  ");
    out += marked ? "  (* this process's GPU)\n\n" : StrCat("  (", picture.gpu_note, ")\n\n");
  }

  if (picture.nics.empty()) {
    out += "NICs: none\n";
  } else {
    out += "NICs:\n";
    Table nics({"#", "PCI", "name", "OS devices", "NUMA"});
    for (size_t n = 0; n < picture.nics.size(); ++n) {
      const topology::NicInfo& nic = picture.nics[n];
      nics.Add({std::to_string(n), topology::FormatPciAddress(nic.pci), OrDash(nic.name),
                OrDash(nic.os_devices), NumaText(nic.numa_node, "")});
    }
    out += nics.Render("  ");
  }
  return out;
}

std::string TopologyTable(const topology::Topology& topology) {
  std::string out;
  for (const topology::Finding& finding : topology.findings) {
    if (finding.kind == topology::Finding::Kind::kNote) out += StrCat(finding.text, "\n");
  }
  out += "\nracks:\n";
  Table racks({"rack", "name", "nodes"});
  for (int r = 0; r < topology.num_racks(); ++r) {
    racks.Add({std::to_string(r), RackName(topology, r),
               RangeList(topology.racks[static_cast<size_t>(r)].nodes)});
  }
  out += racks.Render("  ");
  out += "\nnodes:\n";
  Table nodes({"node", "host", "rack", "ranks", "local size"});
  for (int n = 0; n < topology.num_nodes(); ++n) {
    const topology::NodeInfo& node = topology.nodes[static_cast<size_t>(n)];
    nodes.Add({std::to_string(n), node.host, RackName(topology, node.rack), RangeList(node.ranks),
               std::to_string(node.ranks.size())});
  }
  out += nodes.Render("  ");
  bool first = true;
  for (const topology::Finding& finding : topology.findings) {
    if (finding.kind == topology::Finding::Kind::kNote) continue;
    if (first) out += "\nfindings:\n";
    first = false;
    out += StrCat("  ", finding.text, "\n");
  }
  return out;
}

}  // namespace zpp::tools
