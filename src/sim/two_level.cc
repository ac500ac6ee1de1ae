#include "sim/two_level.h"

#include <algorithm>
#include <cstring>

#include "codec/element_io.h"
#include "log/log.h"

namespace zpp::sim {

Result TwoLevelAllGather(transport::Transport& transport, const TwoLevelCall& call,
                         const void* send, void* recv, size_t bytes) {
  const TwoLevelLayout& layout = *call.layout;
  const size_t n = static_cast<size_t>(layout.nodes);
  const size_t g = static_cast<size_t>(layout.ranks_per_node);
  // Across nodes: the pieces of this rank's inter-node group, in node order.
  std::vector<std::byte> column(n * bytes);
  ZPP_CHECK(
      transport.AllGather(call.rank, call.inter, call.inter_sequence, send, column.data(), bytes));
  // Inside the node: every local rank's column.
  std::vector<std::byte> node(g * n * bytes);
  ZPP_CHECK(transport.AllGather(call.rank, call.intra, call.intra_sequence, column.data(),
                                node.data(), n * bytes));
  for (size_t l = 0; l < g; ++l) {
    for (size_t k = 0; k < n; ++k) {
      const size_t owner = static_cast<size_t>(layout.rank_at[k * g + l]);
      std::memcpy(static_cast<std::byte*>(recv) + owner * bytes, node.data() + (l * n + k) * bytes,
                  bytes);
    }
  }
  return ncclSuccess;
}

Result TwoLevelReduceScatter(transport::Transport& transport, const TwoLevelCall& call,
                             const void* send, void* recv, size_t count, ncclDataType_t dtype,
                             float scale) {
  const TwoLevelLayout& layout = *call.layout;
  const size_t n = static_cast<size_t>(layout.nodes);
  const size_t g = static_cast<size_t>(layout.ranks_per_node);
  const size_t chunk = count * codec::ElementBytes(dtype);
  // To local rank l go the chunks of l's inter-node group (node order).
  std::vector<std::byte> staged(g * n * chunk), received(g * n * chunk);
  for (size_t l = 0; l < g; ++l) {
    for (size_t k = 0; k < n; ++k) {
      const size_t owner = static_cast<size_t>(layout.rank_at[k * g + l]);
      std::memcpy(staged.data() + (l * n + k) * chunk,
                  static_cast<const std::byte*>(send) + owner * chunk, chunk);
    }
  }
  ZPP_CHECK(transport.AllToAll(call.rank, call.intra, call.intra_sequence, staged.data(),
                               received.data(), n * chunk));
  // The node's partial sum for each rank of this rank's inter-node group, in local order.
  std::vector<float> sum(count), values(count);
  std::vector<std::byte> partial(n * chunk), partials(n * chunk);
  for (size_t k = 0; k < n; ++k) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (size_t l = 0; l < g; ++l) {
      codec::LoadElements(received.data() + (l * n + k) * chunk, dtype, 0, count, values.data());
      for (size_t i = 0; i < count; ++i) sum[i] += values[i];
    }
    codec::StoreElements(partial.data() + k * chunk, dtype, 0, count, sum.data());
  }
  ZPP_CHECK(transport.AllToAll(call.rank, call.inter, call.inter_sequence, partial.data(),
                               partials.data(), chunk));
  std::fill(sum.begin(), sum.end(), 0.0f);
  for (size_t k = 0; k < n; ++k) {
    codec::LoadElements(partials.data() + k * chunk, dtype, 0, count, values.data());
    for (size_t i = 0; i < count; ++i) sum[i] += values[i];
  }
  for (float& value : sum) value *= scale;
  codec::StoreElements(recv, dtype, 0, count, sum.data());
  return ncclSuccess;
}

}  // namespace zpp::sim
