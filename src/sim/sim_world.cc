#include "sim/sim_world.h"

#include <thread>

#include "log/log.h"
#include "sim/sim_backend.h"
#include "transport/in_process_transport.h"

namespace zpp::sim {

SimWorld::SimWorld(ClusterLayout layout)
    : layout_(std::move(layout)),
      transport_(std::make_shared<transport::InProcessTransport>()),
      sent_(layout_.world_size()),
      sequences_(layout_.world_size()) {}

SimWorld::SimWorld(ClusterLayout layout, std::shared_ptr<transport::Transport> transport)
    : SimWorld(std::move(layout), -1, std::move(transport)) {}

SimWorld::SimWorld(ClusterLayout layout, int local_rank,
                   std::shared_ptr<transport::Transport> transport)
    : layout_(std::move(layout)),
      local_rank_(local_rank),
      transport_(std::move(transport)),
      sent_(layout_.world_size()),
      sequences_(layout_.world_size()) {}

SimWorld::~SimWorld() = default;

void SimWorld::RunRanks(const std::function<void(SimBackend& backend)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(world_size());
  for (int rank = 0; rank < world_size(); ++rank) {
    if (!Hosts(rank)) continue;
    threads.emplace_back([this, rank, &body] {
      log::ScopedRank scoped_rank(rank);
      SimBackend backend(*this, rank);
      body(backend);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

uint64_t SimWorld::SentBytes(int rank, zppLink_t link) const {
  return sent_[rank][link].load(std::memory_order_relaxed);
}

uint64_t SimWorld::TotalSentBytes(zppLink_t link) const {
  uint64_t total = 0;
  for (int rank = 0; rank < world_size(); ++rank) total += SentBytes(rank, link);
  return total;
}

void SimWorld::ResetCounters() {
  for (auto& links : sent_) {
    for (auto& counter : links) counter.store(0);
  }
}

void SimWorld::CountSent(int rank, zppLink_t link, uint64_t bytes) {
  sent_[rank][link].fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace zpp::sim
