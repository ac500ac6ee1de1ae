// A simulated cluster: N ranks in one process, each a thread with its own SimBackend, meeting
// in collectives. It counts, exactly, the bytes each rank sends over each link class.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "sim/cluster_layout.h"
#include "sim/rendezvous.h"

namespace zpp::sim {

class SimBackend;

class SimWorld {
 public:
  explicit SimWorld(ClusterLayout layout);
  ~SimWorld();

  const ClusterLayout& layout() const { return layout_; }
  int world_size() const { return layout_.world_size(); }

  // Runs body(backend) for every rank, one thread each, and waits for all of them.
  void RunRanks(const std::function<void(SimBackend& backend)>& body);

  // Bytes rank `rank` has sent over `link` since the start or the last ResetCounters.
  uint64_t SentBytes(int rank, zppLink_t link) const;
  uint64_t TotalSentBytes(zppLink_t link) const;
  void ResetCounters();
  // Host-blocking synchronizations issued through any backend of this world.
  uint64_t host_synchronizations() const { return host_syncs_.load(); }

  // Internal to the sim backend.
  Rendezvous& RendezvousOf(GroupKind kind, int first_member);
  // The two-member meeting point of the `sequence`-th message from `from` to `to`.
  Rendezvous& PairRendezvous(int from, int to);
  void CountSent(int rank, zppLink_t link, uint64_t bytes);
  void CountHostSync() { host_syncs_.fetch_add(1); }

 private:
  const ClusterLayout layout_;
  std::vector<std::array<std::atomic<uint64_t>, zppNumLinks>> sent_;
  std::atomic<uint64_t> host_syncs_{0};
  std::mutex mutex_;
  std::map<std::pair<GroupKind, int>, std::unique_ptr<Rendezvous>> rendezvous_;
  std::map<std::pair<int, int>, std::unique_ptr<Rendezvous>> pairs_;
};

}  // namespace zpp::sim
