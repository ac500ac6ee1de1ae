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

std::shared_ptr<ZppCommunicator> CommRegistry::Retire(ncclComm_t comm, const char* why) {
  std::shared_ptr<CommState> state;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = live_.find(comm);
    if (found == live_.end()) return nullptr;
    state = found->second;
    live_.erase(found);
    retired_.insert(comm);
  }
  return state->TakeZpp(why);
}

bool CommRegistry::WasRetired(ncclComm_t comm) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return retired_.count(comm) != 0;
}

std::vector<std::shared_ptr<CommState>> CommRegistry::Live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<CommState>> live;
  for (const auto& [comm, state] : live_) live.push_back(state);
  return live;
}

std::vector<std::shared_ptr<CommState>> CommRegistry::All() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return history_;
}

std::shared_ptr<ZppCommunicator> CommState::Zpp() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return zpp_;
}

std::string CommState::Unavailable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unavailable_;
}

void CommState::SetZpp(std::shared_ptr<ZppCommunicator> zpp) {
  std::lock_guard<std::mutex> lock(mutex_);
  zpp_ = std::move(zpp);
  unavailable_.clear();
}

std::shared_ptr<ZppCommunicator> CommState::TakeZpp(std::string why) {
  std::lock_guard<std::mutex> lock(mutex_);
  unavailable_ = std::move(why);
  return std::move(zpp_);
}

CommRegistry& Comms() {
  static CommRegistry* registry = new CommRegistry();  // hooks may run during exit
  return *registry;
}

}  // namespace zpp::plugin
