// zpp-topo: what zpp's topology discovery sees.
//   zpp-topo                                   this machine: GPUs, NICs, NUMA, the rack id
//   zpp-topo --xml FILE [--gpu BUSID]          the same for an hwloc XML export (lstopo x.xml)
//   zpp-topo --ranks N --local-size G --racks R   the grouping a simulated cluster gets
//   --json                                     machine-readable output of either
#include <cstdio>
#include <optional>
#include <span>
#include <string>

#include "CLI/CLI.hpp"
#include "config/config.h"
#include "topo_json.h"
#include "topo_table.h"
#include "topology/grouping.h"
#include "topology/host_identity.h"
#include "topology/hwloc_picture.h"
#include "topology/pci_address.h"
#include "topology/rack_resolution.h"
#include "topology/rank_record.h"
#include "topology/simulated_cluster.h"

namespace {

namespace topo = zpp::topology;

int PrintCluster(const topo::SimulatedCluster& cluster, bool json) {
  std::string why;
  const std::vector<topo::RankRecord> records = topo::SimulatedClusterRecords(cluster, &why);
  if (records.empty()) {
    std::fprintf(stderr, "zpp-topo: %s\n", why.c_str());
    return 2;
  }
  const topo::Topology topology = topo::BuildTopology(records);
  if (json) {
    std::printf("%s\n", zpp::tools::TopologyJson(topology).dump(2).c_str());
  } else {
    std::fputs(zpp::tools::TopologyTable(topology).c_str(), stdout);
  }
  return 0;
}

int PrintMachine(const std::string& xml, const std::string& gpu_text, bool json) {
  topo::PictureRequest request;
  request.xml_path = xml;
  if (!gpu_text.empty()) {
    request.gpu = topo::ParsePciAddress(gpu_text);
    if (!request.gpu) {
      std::fprintf(stderr, "zpp-topo: --gpu %s is not a PCI address (0000:07:00.0)\n",
                   gpu_text.c_str());
      return 2;
    }
  }
  topo::LocalPicture picture;
  if (topo::LoadLocalPicture(request, &picture) != ncclSuccess) {
    std::fprintf(stderr, "zpp-topo: hwloc could not describe %s\n",
                 xml.empty() ? "this machine" : xml.c_str());
    return 1;
  }
  const zpp::config::EnvLookup env = zpp::config::ProcessEnvironment();
  const topo::HostIdentity host = topo::DiscoverHostIdentity(env);
  // The rack is looked up under the picture's host name, so an XML export of another machine
  // shows that machine's rack from ZPP_TOPO_FILE.
  const topo::RackChoice rack = topo::ResolveRack(zpp::GetConfig(), env, picture.host_name);

  topo::RankRecordInputs inputs;
  inputs.host = host;
  inputs.host.name = picture.host_name;
  inputs.rack = rack;
  const topo::RankRecord record = topo::MakeRankRecord(inputs, picture);
  const topo::Topology topology = topo::BuildTopology(std::span(&record, 1));
  if (json) {
    std::printf("%s\n", zpp::tools::MachineJson(picture, host, rack, topology).dump(2).c_str());
  } else {
    std::fputs(zpp::tools::PictureTable(picture, host, rack).c_str(), stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Shows the machine and rank grouping zpp discovers."};
  std::string xml;
  std::string gpu;
  topo::SimulatedCluster cluster;
  bool json = false;
  app.add_option("--xml", xml, "read the machine from an hwloc XML file instead")
      ->check(CLI::ExistingFile);
  app.add_option("--gpu", gpu, "the PCI address of this process's GPU (0000:07:00.0)");
  CLI::Option* ranks = app.add_option("--ranks", cluster.ranks, "simulate a cluster of N ranks")
                           ->check(CLI::Range(1, 1 << 20));
  app.add_option("--local-size", cluster.local_size, "ranks per node of the simulated cluster")
      ->check(CLI::Range(1, 1 << 20))
      ->needs(ranks);
  app.add_option("--racks", cluster.racks, "racks of the simulated cluster (default 1)")
      ->check(CLI::Range(1, 1 << 20))
      ->needs(ranks);
  app.add_flag("--json", json, "print JSON instead of tables");
  CLI11_PARSE(app, argc, argv);

  if (ranks->count() > 0) {
    if (!xml.empty() || !gpu.empty()) {
      std::fprintf(stderr, "zpp-topo: --ranks does not combine with --xml or --gpu\n");
      return 2;
    }
    return PrintCluster(cluster, json);
  }
  return PrintMachine(xml, gpu, json);
}
