#include "topology/hwloc_picture.h"

#include <hwloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

#include "log/log.h"

namespace zpp::topology {
namespace {

// PCI class codes (class << 8 | subclass) and vendors that matter here.
constexpr unsigned kClassDisplay = 0x03;  // VGA 0x0300, 3D controller 0x0302, ...
constexpr unsigned kClass3dController = 0x0302;
constexpr unsigned kClassNetwork = 0x02;  // Ethernet 0x0200, InfiniBand 0x0207, ...
constexpr unsigned kVendorNvidia = 0x10de;
constexpr unsigned kVendorAmd = 0x1002;

// Owns an hwloc topology for the length of one LoadLocalPicture.
class HwlocTopology {
 public:
  HwlocTopology() = default;
  ~HwlocTopology() {
    if (initialized_) hwloc_topology_destroy(handle_);
  }
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;

  bool Init() {
    initialized_ = hwloc_topology_init(&handle_) == 0;
    return initialized_;
  }
  hwloc_topology_t get() const { return handle_; }

 private:
  hwloc_topology_t handle_ = nullptr;
  bool initialized_ = false;
};

// Owns a string from hwloc_bitmap_list_asprintf.
std::string BitmapList(hwloc_const_bitmap_t bitmap) {
  if (bitmap == nullptr || hwloc_bitmap_iszero(bitmap)) return "";
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, bitmap) < 0 || text == nullptr) return "";
  std::string out(text);
  std::free(text);
  return out;
}

PciAddress AddressOf(hwloc_obj_t pci) {
  PciAddress address;
  address.domain = pci->attr->pcidev.domain;
  address.bus = pci->attr->pcidev.bus;
  address.device = pci->attr->pcidev.dev;
  address.function = pci->attr->pcidev.func;
  return address;
}

bool HasOsDevice(hwloc_obj_t pci, hwloc_obj_osdev_type_t type) {
  for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type == HWLOC_OBJ_OS_DEVICE && child->attr->osdev.type == type) return true;
  }
  return false;
}

// A datacenter GPU is a 3D controller; NVIDIA and AMD GPUs may also call themselves VGA. The
// server's BMC display (ASPEED and the like) is a VGA device too, and must not count. hwloc
// builds with the CUDA/NVML plugins add a co-processor OS device, which settles it.
bool IsGpu(hwloc_obj_t pci) {
  const unsigned pci_class = pci->attr->pcidev.class_id;
  const unsigned vendor = pci->attr->pcidev.vendor_id;
  if (HasOsDevice(pci, HWLOC_OBJ_OSDEV_COPROC)) return true;
  if (pci_class == kClass3dController) return true;
  return (pci_class >> 8) == kClassDisplay && (vendor == kVendorNvidia || vendor == kVendorAmd);
}

bool IsNic(hwloc_obj_t pci) { return (pci->attr->pcidev.class_id >> 8) == kClassNetwork; }

// The smallest normal (non-I/O) object above an I/O object: it carries the locality.
hwloc_obj_t LocalityOf(hwloc_topology_t topo, hwloc_obj_t io) {
  return hwloc_get_non_io_ancestor_obj(topo, io);
}

int SingleNumaNode(hwloc_obj_t locality) {
  if (locality == nullptr || locality->nodeset == nullptr) return -1;
  if (hwloc_bitmap_weight(locality->nodeset) != 1) return -1;
  return hwloc_bitmap_first(locality->nodeset);
}

NicInfo DescribeNic(hwloc_topology_t topo, hwloc_obj_t pci) {
  NicInfo nic;
  nic.pci = AddressOf(pci);
  std::string network_name;
  for (hwloc_obj_t child = pci->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE || child->name == nullptr) continue;
    if (!nic.os_devices.empty()) nic.os_devices += ',';
    nic.os_devices += child->name;
    if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && nic.name.empty()) {
      nic.name = child->name;
    } else if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && network_name.empty()) {
      network_name = child->name;
    }
  }
  if (nic.name.empty()) nic.name = network_name;
  nic.numa_node = SingleNumaNode(LocalityOf(topo, pci));
  return nic;
}

GpuInfo DescribeGpu(hwloc_topology_t topo, hwloc_obj_t pci) {
  GpuInfo gpu;
  gpu.pci = AddressOf(pci);
  gpu.vendor_id = pci->attr->pcidev.vendor_id;
  gpu.device_id = pci->attr->pcidev.device_id;
  const hwloc_obj_t locality = LocalityOf(topo, pci);
  if (locality != nullptr) {
    gpu.numa_node = SingleNumaNode(locality);
    gpu.numa_nodes = BitmapList(locality->nodeset);
    gpu.cpus = BitmapList(locality->cpuset);
    if (locality->cpuset != nullptr) {
      gpu.cores_near =
          hwloc_get_nbobjs_inside_cpuset_by_type(topo, locality->cpuset, HWLOC_OBJ_CORE);
    }
  }
  return gpu;
}

// The path class from a GPU to a NIC, and how many levels above the GPU their paths meet (the
// tie-break between two NICs of one class: two switches apart is farther than one).
struct PathToNic {
  NicPath path;
  int levels;
  bool operator<(const PathToNic& other) const {
    return std::tie(path, levels) < std::tie(other.path, other.levels);
  }
};

bool IsAncestorOrSelf(hwloc_obj_t ancestor, hwloc_obj_t obj) {
  for (; obj != nullptr; obj = obj->parent) {
    if (obj == ancestor) return true;
  }
  return false;
}

// hwloc_get_common_ancestor_obj compares depths, and I/O objects all share special negative
// depths; walking parents is simple and right for any mix of object kinds.
PathToNic PathBetween(hwloc_topology_t topo, hwloc_obj_t gpu, hwloc_obj_t nic) {
  int levels = 0;
  hwloc_obj_t common = gpu;
  while (common != nullptr && !IsAncestorOrSelf(common, nic)) {
    common = common->parent;
    ++levels;
  }
  if (common != nullptr && common->type == HWLOC_OBJ_BRIDGE) {
    const bool host = common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
    return {host ? NicPath::kHostBridge : NicPath::kPcieSwitch, levels};
  }
  const hwloc_obj_t gpu_locality = LocalityOf(topo, gpu);
  const hwloc_obj_t nic_locality = LocalityOf(topo, nic);
  const bool same_numa = gpu_locality != nullptr && nic_locality != nullptr &&
                         gpu_locality->nodeset != nullptr && nic_locality->nodeset != nullptr &&
                         hwloc_bitmap_isequal(gpu_locality->nodeset, nic_locality->nodeset);
  return {same_numa ? NicPath::kSameNuma : NicPath::kCrossNuma, levels};
}

// Components zpp keeps hwloc from using. CUDA, NVML, OpenCL, ROCm SMI and Level Zero would
// initialize GPU runtimes inside the training process, on every rank, just to name devices zpp
// already knows by PCI address; GL would try to reach an X server. The "pci" plugin reads the
// tree through libpciaccess, which leaks its state and is missing where hwloc's plugins are not
// installed; the built-in Linux backend reads the same tree from sysfs, everywhere.
void AvoidUnneededComponents(hwloc_topology_t topo) {
  for (const char* name : {"cuda", "nvml", "opencl", "rsmi", "levelzero", "gl", "pci"}) {
    // Fails with ENOENT for a component this hwloc was built without: nothing to avoid then.
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, name);
  }
}

std::string ThisHostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

}  // namespace

Result LoadLocalPicture(const PictureRequest& request, LocalPicture* picture) {
  *picture = LocalPicture{};
  picture->source = request.xml_path.empty() ? std::string(kThisMachine) : request.xml_path;

  HwlocTopology topology;
  if (!topology.Init()) {
    ZPP_WARN(
        "hwloc: cannot initialize a topology (%s); no local picture: the GPU and NIC placement "
        "notes are left out",
        std::strerror(errno));
    return ncclSystemError;
  }
  hwloc_topology_t topo = topology.get();
  // I/O objects are left out unless asked for; "important" keeps GPUs, NICs, the bridges above
  // them and their OS devices, and drops the rest of the PCI noise.
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  AvoidUnneededComponents(topo);
  if (!request.xml_path.empty() && hwloc_topology_set_xml(topo, request.xml_path.c_str()) != 0) {
    ZPP_WARN(
        "hwloc: cannot use XML file %s (%s); no local picture (check the path, or write the file "
        "with hwloc's lstopo)",
        request.xml_path.c_str(), std::strerror(errno));
    return ncclSystemError;
  }
  if (hwloc_topology_load(topo) != 0) {
    ZPP_WARN(
        "hwloc: cannot load the topology of %s (%s); no local picture: the GPU and NIC placement "
        "notes are left out",
        picture->source.c_str(), std::strerror(errno));
    return ncclSystemError;
  }

  const hwloc_obj_t root = hwloc_get_root_obj(topo);
  const char* xml_host = request.xml_path.empty() || root == nullptr
                             ? nullptr
                             : hwloc_obj_get_info_by_name(root, "HostName");
  picture->host_name = xml_host != nullptr ? xml_host : ThisHostName();
  picture->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  picture->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  picture->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  picture->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);

  std::vector<hwloc_obj_t> gpu_objects;
  std::vector<hwloc_obj_t> nic_objects;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topo, pci)) {
    if (IsGpu(pci)) {
      gpu_objects.push_back(pci);
      picture->gpus.push_back(DescribeGpu(topo, pci));
    } else if (IsNic(pci)) {
      nic_objects.push_back(pci);
      picture->nics.push_back(DescribeNic(topo, pci));
    }
  }

  for (size_t g = 0; g < gpu_objects.size(); ++g) {
    GpuInfo& gpu = picture->gpus[g];
    std::optional<PathToNic> best;
    for (size_t n = 0; n < nic_objects.size(); ++n) {
      const PathToNic path = PathBetween(topo, gpu_objects[g], nic_objects[n]);
      if (!best || path < *best) {
        best = path;
        gpu.nearest_nics.clear();
      }
      if (!(*best < path)) gpu.nearest_nics.push_back(static_cast<int>(n));
    }
    if (best) gpu.nic_path = best->path;
  }

  if (!SelectGpu(request.gpu, picture)) {
    ZPP_INFO(kTopo, "%s; zpp goes on without GPU affinity", picture->gpu_note.c_str());
  }
  return ncclSuccess;
}

}  // namespace zpp::topology
