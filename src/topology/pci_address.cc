#include "topology/pci_address.h"

#include <cstdio>

#include "common/text.h"

namespace zpp::topology {
namespace {

// Parses 1..max_digits hex digits; nullopt on anything else (no sign, no 0x, no blanks).
std::optional<uint32_t> ParseHex(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  uint32_t value = 0;
  for (char c : s) {
    uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return value;
}

}  // namespace

std::optional<PciAddress> ParsePciAddress(std::string_view text) {
  const std::vector<std::string_view> parts = text::Split(text::Trim(text), ':');
  if (parts.size() != 2 && parts.size() != 3) return std::nullopt;
  const bool has_domain = parts.size() == 3;
  const std::vector<std::string_view> dev_fn = text::Split(parts.back(), '.');
  if (dev_fn.size() != 2) return std::nullopt;

  const std::optional<uint32_t> domain = has_domain ? ParseHex(parts[0], 8) : uint32_t{0};
  const std::optional<uint32_t> bus = ParseHex(parts[has_domain ? 1 : 0], 2);
  const std::optional<uint32_t> device = ParseHex(dev_fn[0], 2);
  const std::optional<uint32_t> function = ParseHex(dev_fn[1], 1);
  // PCI allows 32 devices per bus and 8 functions per device.
  if (!domain || !bus || !device || !function || *device > 0x1f || *function > 7) {
    return std::nullopt;
  }
  PciAddress address;
  address.domain = *domain;
  address.bus = static_cast<uint8_t>(*bus);
  address.device = static_cast<uint8_t>(*device);
  address.function = static_cast<uint8_t>(*function);
  return address;
}

std::string FormatPciAddress(const PciAddress& address) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", address.domain, address.bus,
                address.device, address.function);
  return text;
}

}  // namespace zpp::topology
