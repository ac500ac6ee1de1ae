// What zpp knows about each NCCL communicator the process created: its size and rank, whether
// it blocks, its counters, and zpp's state on it. Hooks on creation add an entry, hooks on
// destroy/abort retire it (its counters stay for the exit report, its address is remembered so
// that a call on a destroyed communicator is caught instead of handed to freed memory).
#pragma once

#include <nccl.h>

#include <atomic>
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
  uint64_t id = 0;  // creation order, for the report
  // A non-blocking communicator whose set-up waits for its first eligible collective.
  std::atomic<bool> setup_pending{false};
  std::atomic<bool> sub_error_reported{false};  // its WARN, once

  // zpp on this communicator; null when zpp passes every call through (Unavailable() says why).
  // Shared: a call in flight holds it, so that an abort or destroy on another thread (PyTorch's
  // watchdog) never frees the engine under a running call.
  std::shared_ptr<ZppCommunicator> Zpp() const;
  std::string Unavailable() const;
  void SetZpp(std::shared_ptr<ZppCommunicator> zpp);
  // zpp is gone from this communicator (set-up failed, destroyed, aborted): `why`, and the
  // communicator zpp had, for the caller to release or keep.
  std::shared_ptr<ZppCommunicator> TakeZpp(std::string why);

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<ZppCommunicator> zpp_;
  std::string unavailable_;
};

class CommRegistry {
 public:
  std::shared_ptr<CommState> Add(ncclComm_t comm, int rank, int nranks, bool blocking);
  std::shared_ptr<CommState> Find(ncclComm_t comm) const;
  // Drops the live entry (the state lives on while a call still holds it, and in the report) and
  // hands back zpp's communicator on it, for the caller to release (destroy) or keep (abort).
  std::shared_ptr<ZppCommunicator> Retire(ncclComm_t comm, const char* why);
  bool WasRetired(ncclComm_t comm) const;
  // The communicators not destroyed or aborted yet.
  std::vector<std::shared_ptr<CommState>> Live() const;
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
