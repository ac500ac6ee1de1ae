#include "transport/rendezvous.h"

namespace zpp::transport {

const Rendezvous::Buffers* Rendezvous::Arrive(uint64_t sequence, int member, const void* send,
                                              void* recv) {
  std::unique_lock<std::mutex> lock(mutex_);
  Slot& slot = slots_[sequence];
  if (slot.broken) return nullptr;
  if (slot.buffers.send.empty()) {
    slot.buffers.send.assign(members_, nullptr);
    slot.buffers.recv.assign(members_, nullptr);
  }
  slot.buffers.send[member] = send;
  slot.buffers.recv[member] = recv;
  ++slot.arrived;
  changed_.notify_all();
  const bool all =
      changed_.wait_for(lock, deadline_, [&] { return slot.broken || slot.arrived == members_; });
  if (!all || slot.broken) {
    // The slot stays (broken) so that late members fail at once instead of waiting again.
    slot.broken = true;
    changed_.notify_all();
    return nullptr;
  }
  return &slot.buffers;
}

bool Rendezvous::Depart(uint64_t sequence) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = slots_.find(sequence);
  Slot& slot = it->second;
  ++slot.departed;
  changed_.notify_all();
  const bool all =
      changed_.wait_for(lock, deadline_, [&] { return slot.broken || slot.departed == members_; });
  if (!all || slot.broken) {
    slot.broken = true;
    changed_.notify_all();
    return false;
  }
  // Every member has passed the wait once `left` is full: only then can the slot go.
  if (++slot.left == members_) slots_.erase(it);
  return true;
}

}  // namespace zpp::transport
