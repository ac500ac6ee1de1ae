#include "sim/two_level.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "codec/element_io.h"
#include "log/log.h"
#include "sim/scratch.h"

namespace zpp::sim {

namespace {

// The world rank at node position k, local position l.
size_t Owner(const TwoLevelLayout& layout, size_t k, size_t l) {
  return static_cast<size_t>(layout.rank_at[k * static_cast<size_t>(layout.ranks_per_node) + l]);
}

// Each stage's wall time at TRACE (EXEC): where a CPU collective's time goes on a slow link. The
// clock is read only when that line would be written.
class StageClock {
 public:
  StageClock() : on_(log::Enabled(log::Level::kTrace, log::kExec)) {
    if (on_) start_ = Clock::now();
  }
  void Lap(const char* stage, size_t bytes) {
    if (!on_) return;
    const Clock::time_point now = Clock::now();
    // The monotonic clock is the machine's: the ranks' lines line up across processes.
    ZPP_TRACE(kExec, "%s: %zu bytes a part, %.3f ms, ended at %.3f ms", stage, bytes,
              std::chrono::duration<double, std::milli>(now - start_).count(),
              std::chrono::duration<double, std::milli>(now.time_since_epoch()).count());
    start_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  const bool on_;
  Clock::time_point start_;
};

}  // namespace

Result TwoLevelAllGather(transport::Transport& transport, const TwoLevelCall& call,
                         const void* send, void* recv, size_t bytes) {
  const TwoLevelLayout& layout = *call.layout;
  const auto* piece = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  const auto me = static_cast<size_t>(call.intra.my_index);
  StageClock clock;
  // Across nodes: each node's piece of this local position, straight into its owner's place.
  ZPP_CHECK(transport.ExchangeParts(
      call.rank, call.inter, call.inter_sequence, 1, bytes,
      [piece](size_t, size_t) { return piece; },
      [&](size_t k, size_t) { return out + Owner(layout, k, me) * bytes; },
      "all-gather (across nodes)"));
  clock.Lap("all-gather across nodes", bytes);
  // Inside the node: every local position's pieces, one part per node, in place.
  ZPP_CHECK(transport.ExchangeParts(
      call.rank, call.intra, call.intra_sequence, static_cast<size_t>(layout.nodes), bytes,
      [&](size_t, size_t k) -> const std::byte* { return out + Owner(layout, k, me) * bytes; },
      [&](size_t l, size_t k) { return l == me ? nullptr : out + Owner(layout, k, l) * bytes; },
      "all-gather (inside the node)"));
  clock.Lap("all-gather inside the node", bytes);
  return ncclSuccess;
}

Result TwoLevelReduceScatter(transport::Transport& transport, const TwoLevelCall& call,
                             const void* send, void* recv, size_t count, ncclDataType_t dtype,
                             float scale) {
  const TwoLevelLayout& layout = *call.layout;
  const size_t n = static_cast<size_t>(layout.nodes);
  const size_t g = static_cast<size_t>(layout.ranks_per_node);
  const size_t chunk = count * NcclTypeBytes(dtype);
  const auto* input = static_cast<const std::byte*>(send);
  const auto me = static_cast<size_t>(call.intra.my_index);
  const auto my_node = static_cast<size_t>(call.inter.my_index);
  Scratch& scratch = Scratch::OfThisThread();
  StageClock clock;
  // To local position l go the chunks of l's inter-node group, one part per node, read in place;
  // from each, those of this rank's group. This rank's own stay in the input.
  std::byte* received = scratch.Take(0, g * n * chunk);
  ZPP_CHECK(transport.ExchangeParts(
      call.rank, call.intra, call.intra_sequence, n, chunk,
      [&](size_t l, size_t k) { return input + Owner(layout, k, l) * chunk; },
      [&](size_t l, size_t k) { return l == me ? nullptr : received + (l * n + k) * chunk; },
      "reduce-scatter (inside the node)"));
  clock.Lap("reduce-scatter inside the node", chunk);
  // The node's partial sum for each rank of this rank's inter-node group, in local order, rounded
  // to the dtype; then their sum across nodes, in node order.
  std::byte* partial = scratch.Take(2, n * chunk);
  std::byte* partials = scratch.Take(3, n * chunk);
  std::vector<const std::byte*> terms(std::max(g, n));
  for (size_t k = 0; k < n; ++k) {
    for (size_t l = 0; l < g; ++l) {
      terms[l] = l == me ? input + Owner(layout, k, me) * chunk : received + (l * n + k) * chunk;
    }
    codec::SumElements(terms.data(), g, dtype, count, 1.0f, partial + k * chunk);
  }
  clock.Lap("reduce-scatter's node sums", chunk);
  ZPP_CHECK(transport.ExchangeParts(
      call.rank, call.inter, call.inter_sequence, 1, chunk,
      [partial, chunk](size_t k, size_t) -> const std::byte* { return partial + k * chunk; },
      [&](size_t k, size_t) { return k == my_node ? nullptr : partials + k * chunk; },
      "reduce-scatter (across nodes)"));
  clock.Lap("reduce-scatter across nodes", chunk);
  for (size_t k = 0; k < n; ++k) terms[k] = (k == my_node ? partial : partials) + k * chunk;
  codec::SumElements(terms.data(), n, dtype, count, scale, recv);
  clock.Lap("reduce-scatter's sum across nodes", chunk);
  return ncclSuccess;
}

}  // namespace zpp::sim
