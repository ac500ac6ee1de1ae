// What one rank sees of its own machine: the GPUs and NICs on the PCI tree, how close each NIC
// is to each GPU, the NUMA node and cores near each GPU, and which GPU this rank drives.
// Plain data: hwloc fills it (hwloc_picture.h), tests and the tools read it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "topology/pci_address.h"

namespace zpp::topology {

// How traffic from a GPU reaches a NIC, closest first (NCCL's PIX/PXB, PHB, NODE, SYS).
#define ZPP_NIC_PATHS(X)                                                                    \
  X(kPcieSwitch, "pcie-switch") /* below a common PCIe switch: no trip through the CPU */   \
  X(kHostBridge, "host-bridge") /* through the host bridge (root complex) both hang from */ \
  X(kSameNuma, "same-numa")     /* through the CPU, inside one NUMA node */                 \
  X(kCrossNuma, "cross-numa")   /* across the inter-socket (or inter-NUMA) link */
enum class NicPath : uint8_t { ZPP_NIC_PATHS(ZPP_ENUMERATOR) };

std::string_view NicPathName(NicPath path);

struct NicInfo {
  PciAddress pci;
  // The name NCCL_IB_HCA and NCCL_SOCKET_IFNAME use: the OpenFabrics device (mlx5_0) when there
  // is one, else the network interface (eth0); empty when the OS shows no device for it.
  std::string name;
  std::string os_devices;  // every OS device of the NIC, comma-separated ("mlx5_0,ib0")
  int numa_node = -1;      // -1: unknown or spans several
};

struct GpuInfo {
  PciAddress pci;
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  int numa_node = -1;             // -1: unknown or spans several (then numa_nodes lists them)
  std::string numa_nodes;         // "0" or "0-1"; empty when unknown
  std::string cpus;               // the PUs near the GPU as a list ("0-23,48-71")
  int cores_near = 0;             // cores inside `cpus`
  std::vector<int> nearest_nics;  // indices into LocalPicture::nics, all at the closest path
  NicPath nic_path = NicPath::kCrossNuma;  // the path to nearest_nics (meaningless when empty)
};

// LocalPicture::source of a picture discovered on the running machine.
inline constexpr std::string_view kThisMachine = "this machine";

struct LocalPicture {
  std::string source;     // kThisMachine or the hwloc XML file it came from
  std::string host_name;  // from the XML when it names one, else gethostname()
  int packages = 0;
  int numa_nodes = 0;
  int cores = 0;
  int pus = 0;
  std::vector<GpuInfo> gpus;
  std::vector<NicInfo> nics;
  int selected_gpu = -1;  // index into gpus of this rank's GPU; -1: none
  std::string gpu_note;   // why selected_gpu is -1, for the log and zpp-topo

  // This rank's GPU, or nullptr.
  const GpuInfo* SelectedGpu() const;
  // The first nearest NIC of this rank's GPU (what a rank would use), or nullptr.
  const NicInfo* NearestNic() const;
};

// Picks this rank's GPU by PCI address and sets selected_gpu and gpu_note. Returns false when an
// address was given but no GPU of the picture has it (no GPU affinity then; not an error).
bool SelectGpu(const std::optional<PciAddress>& gpu, LocalPicture* picture);

}  // namespace zpp::topology
