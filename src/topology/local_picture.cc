#include "topology/local_picture.h"

#include "topology/str_cat.h"

namespace zpp::topology {

std::string_view NicPathName(NicPath path) {
  static constexpr std::string_view kNames[] = {ZPP_NIC_PATHS(ZPP_ENUM_NAME)};
  return NameIn(kNames, path, "unknown");
}

const GpuInfo* LocalPicture::SelectedGpu() const {
  if (selected_gpu < 0 || static_cast<size_t>(selected_gpu) >= gpus.size()) return nullptr;
  return &gpus[static_cast<size_t>(selected_gpu)];
}

const NicInfo* LocalPicture::NearestNic() const {
  const GpuInfo* gpu = SelectedGpu();
  if (gpu == nullptr || gpu->nearest_nics.empty()) return nullptr;
  const int index = gpu->nearest_nics.front();
  if (index < 0 || static_cast<size_t>(index) >= nics.size()) return nullptr;
  return &nics[static_cast<size_t>(index)];
}

bool SelectGpu(const std::optional<PciAddress>& gpu, LocalPicture* picture) {
  picture->selected_gpu = -1;
  if (!gpu) {
    picture->gpu_note = picture->gpus.empty() ? "no GPU on this machine"
                                              : "no GPU given (a process without a CUDA device)";
    return true;
  }
  for (size_t i = 0; i < picture->gpus.size(); ++i) {
    if (picture->gpus[i].pci == *gpu) {
      picture->selected_gpu = static_cast<int>(i);
      picture->gpu_note.clear();
      return true;
    }
  }
  picture->gpu_note = StrCat("GPU ", FormatPciAddress(*gpu), " is not on hwloc's PCI tree");
  return false;
}

}  // namespace zpp::topology
