#include "sim/rendezvous.h"

namespace zpp::sim {

const Rendezvous::Buffers& Rendezvous::Arrive(uint64_t sequence, int member, const void* send,
                                              void* recv) {
  std::unique_lock<std::mutex> lock(mutex_);
  Slot& slot = slots_[sequence];
  if (slot.buffers.send.empty()) {
    slot.buffers.send.assign(members_, nullptr);
    slot.buffers.recv.assign(members_, nullptr);
  }
  slot.buffers.send[member] = send;
  slot.buffers.recv[member] = recv;
  ++slot.arrived;
  changed_.notify_all();
  changed_.wait(lock, [&] { return slot.arrived == members_; });
  return slot.buffers;
}

void Rendezvous::Depart(uint64_t sequence) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = slots_.find(sequence);
  Slot& slot = it->second;
  ++slot.departed;
  changed_.notify_all();
  changed_.wait(lock, [&] { return slot.departed == members_; });
  // Every member has passed the wait once `left` is full: only then can the slot go.
  if (++slot.left == members_) slots_.erase(it);
}

}  // namespace zpp::sim
