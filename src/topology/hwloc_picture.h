// Builds a LocalPicture with hwloc, from this machine or from an hwloc XML export (tests, and
// `zpp-topo --xml` to look at a machine one cannot log in to).
#pragma once

#include <optional>
#include <string>

#include "log/check.h"
#include "topology/local_picture.h"
#include "topology/pci_address.h"

namespace zpp::topology {

struct PictureRequest {
  std::string xml_path;           // empty: discover this machine
  std::optional<PciAddress> gpu;  // this rank's GPU when it has a CUDA device
};

// Fails (one WARN, ncclSystemError) only when hwloc cannot build a topology at all, e.g. a
// missing or broken XML file. A machine without GPUs or NICs is a success with empty lists, and
// a GPU address hwloc does not know leaves selected_gpu at -1 with gpu_note saying why.
Result LoadLocalPicture(const PictureRequest& request, LocalPicture* picture);

}  // namespace zpp::topology
