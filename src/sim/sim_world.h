// A simulated cluster: N ranks, each with its own SimBackend, meeting in collectives. By default
// all N are threads of this process (the in-process transport); a world built for one process of
// a zpp-launch job hosts one rank and reaches the others through a transport (UCP). It counts,
// exactly, the bytes each rank it hosts sends over each link class.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "sim/cluster_layout.h"
#include "transport/transport.h"

namespace zpp::sim {

class SimBackend;

class SimWorld {
 public:
  // Every rank a thread of this process.
  explicit SimWorld(ClusterLayout layout);
  // Every rank a thread of this process, meeting through `transport` (tests: one that watches).
  SimWorld(ClusterLayout layout, std::shared_ptr<transport::Transport> transport);
  // This process hosts `local_rank` only; `transport` reaches the other ranks' processes.
  SimWorld(ClusterLayout layout, int local_rank, std::shared_ptr<transport::Transport> transport);
  ~SimWorld();

  const ClusterLayout& layout() const { return layout_; }
  int world_size() const { return layout_.world_size(); }
  // Whether `rank` runs in this process.
  bool Hosts(int rank) const { return local_rank_ < 0 || rank == local_rank_; }

  // Runs body(backend) for every rank this process hosts, one thread each, and waits for all.
  void RunRanks(const std::function<void(SimBackend& backend)>& body);

  // Bytes rank `rank` has sent over `link` since the start or the last ResetCounters.
  uint64_t SentBytes(int rank, zppLink_t link) const;
  uint64_t TotalSentBytes(zppLink_t link) const;
  void ResetCounters();
  // Host-blocking synchronizations issued through any backend of this world.
  uint64_t host_synchronizations() const { return host_syncs_.load(); }

  // Internal to the sim backend.
  transport::Transport& transport() { return *transport_; }
  void CountSent(int rank, zppLink_t link, uint64_t bytes);
  void CountHostSync() { host_syncs_.fetch_add(1); }

  // A rank's call counts, per group kind: they outlive one RunRanks, so that a process world
  // that runs many bodies keeps matching its calls with the other processes'.
  struct Sequences {
    std::array<uint64_t, 5> collectives{};
    std::array<std::map<int, uint64_t>, 5> sends_to;  // per peer world rank
    std::array<std::map<int, uint64_t>, 5> recvs_from;
  };
  Sequences& SequencesOf(int rank) { return sequences_[rank]; }

 private:
  const ClusterLayout layout_;
  const int local_rank_ = -1;  // -1: every rank is local
  std::shared_ptr<transport::Transport> transport_;
  std::vector<std::array<std::atomic<uint64_t>, zppNumLinks>> sent_;
  std::vector<Sequences> sequences_;
  std::atomic<uint64_t> host_syncs_{0};
};

}  // namespace zpp::sim
