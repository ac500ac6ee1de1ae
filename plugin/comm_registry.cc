#include "plugin/comm_registry.h"

namespace zpp::plugin {

std::shared_ptr<CommState> CommRegistry::Add(ncclComm_t comm, int rank, int nranks, bool blocking) {
  auto state = std::make_shared<CommState>();
  state->comm = comm;
  state->rank = rank;
  state->nranks = nranks;
  state->blocking = blocking;
  std::lock_guard<std::mutex> lock(mutex_);
  state->id = history_.size();
  retired_.erase(comm);
  live_[comm] = state;
  history_.push_back(state);
  return state;
}

std::shared_ptr<CommState> CommRegistry::Find(ncclComm_t comm) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = live_.find(comm);
  return found == live_.end() ? nullptr : found->second;
}

void CommRegistry::Retire(ncclComm_t comm) {
  std::shared_ptr<CommState> state;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = live_.find(comm);
    if (found == live_.end()) return;
    state = found->second;
    live_.erase(found);
    retired_.insert(comm);
  }
  // The sub-communicators and device buffers go before NCCL frees the parent.
  state->zpp.reset();
}

bool CommRegistry::WasRetired(ncclComm_t comm) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retired_.count(comm) != 0;
}

std::vector<std::shared_ptr<CommState>> CommRegistry::All() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_;
}

CommRegistry& Comms() {
  static CommRegistry* registry = new CommRegistry();  // hooks may run during exit
  return *registry;
}

}  // namespace zpp::plugin
