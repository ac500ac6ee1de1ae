// A PCI bus address (domain:bus:device.function): the key that ties the CUDA device a rank uses
// to the device in hwloc's tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zpp::topology {

struct PciAddress {
  uint32_t domain = 0;
  uint8_t bus = 0;
  uint8_t device = 0;
  uint8_t function = 0;

  friend bool operator==(const PciAddress&, const PciAddress&) = default;
};

// Accepts "0000:07:00.0" (CUDA), "00000000:07:00.0" (nvidia-smi) and "07:00.0" (domain 0), in
// any case. nullopt when the text is not an address.
std::optional<PciAddress> ParsePciAddress(std::string_view text);

// The canonical form "0000:07:00.0": lowercase, four-digit domain (hwloc and lspci write it so).
std::string FormatPciAddress(const PciAddress& address);

}  // namespace zpp::topology
