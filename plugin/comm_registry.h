// What zpp knows about each NCCL communicator the process created: its size and rank, whether
// it blocks, its counters, and zpp's state on it. Hooks on creation add an entry, hooks on
// destroy/abort retire it (its counters stay for the exit report, its address is remembered so
// that a call on a destroyed communicator is caught instead of handed to freed memory).
#pragma once

#include <nccl.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda_nccl/zpp_communicator.h"
#include "stats/stats.h"

namespace zpp::plugin {

struct CommState {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
  bool blocking = true;
  StatsCounters stats{&ProcessStats()};
  // Null when zpp passes every call through; `unavailable` then says why.
  std::unique_ptr<ZppCommunicator> zpp;
  std::string unavailable;
  uint64_t id = 0;  // creation order, for the report
};

class CommRegistry {
 public:
  std::shared_ptr<CommState> Add(ncclComm_t comm, int rank, int nranks, bool blocking);
  std::shared_ptr<CommState> Find(ncclComm_t comm) const;
  // Drops the live entry (the state lives on while a call still holds it, and in the report).
  void Retire(ncclComm_t comm);
  bool WasRetired(ncclComm_t comm) const;
  // Every communicator ever added, live or retired, in creation order.
  std::vector<std::shared_ptr<CommState>> All() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<ncclComm_t, std::shared_ptr<CommState>> live_;
  std::unordered_set<ncclComm_t> retired_;  // addresses, until NCCL reuses one
  std::vector<std::shared_ptr<CommState>> history_;
};

CommRegistry& Comms();

}  // namespace zpp::plugin
