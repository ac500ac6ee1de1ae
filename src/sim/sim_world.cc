#include "sim/sim_world.h"

#include <thread>

#include "log/log.h"
#include "sim/sim_backend.h"

namespace zpp::sim {

SimWorld::SimWorld(ClusterLayout layout)
    : layout_(std::move(layout)), sent_(layout_.world_size()) {}

SimWorld::~SimWorld() = default;

void SimWorld::RunRanks(const std::function<void(SimBackend& backend)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(world_size());
  for (int rank = 0; rank < world_size(); ++rank) {
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

Rendezvous& SimWorld::RendezvousOf(GroupKind kind, int first_member) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = rendezvous_[{kind, first_member}];
  if (!slot) {
    const int members = static_cast<int>(layout_.GroupOf(first_member, kind).size());
    slot = std::make_unique<Rendezvous>(members);
  }
  return *slot;
}

Rendezvous& SimWorld::PairRendezvous(int from, int to) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = pairs_[{from, to}];
  if (!slot) slot = std::make_unique<Rendezvous>(2);
  return *slot;
}

void SimWorld::CountSent(int rank, zppLink_t link, uint64_t bytes) {
  sent_[rank][link].fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace zpp::sim
