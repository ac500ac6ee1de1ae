#include "topology/setup_outcome.h"

#include <cstdint>

namespace zpp::topology {

std::string SetUpOutcome::Describe() const {
  if (failed_ranks.empty()) return "every rank succeeded";
  std::string text = failed_ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < failed_ranks.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(failed_ranks[i]);
  }
  return text + " failed";
}

Result AgreeOnOutcome(topology::ByteAllGather& exchange, bool ok, SetUpOutcome* out) {
  const std::byte mine{static_cast<uint8_t>(ok ? 1 : 0)};
  std::vector<std::byte> all(static_cast<size_t>(exchange.size()));
  ZPP_CHECK(exchange.AllGather(std::span(&mine, 1), all));
  *out = SetUpOutcome{};
  for (int rank = 0; rank < exchange.size(); ++rank) {
    if (all[rank] != std::byte{1}) out->failed_ranks.push_back(rank);
  }
  out->all_ok = out->failed_ranks.empty();
  return ncclSuccess;
}

}  // namespace zpp::topology
