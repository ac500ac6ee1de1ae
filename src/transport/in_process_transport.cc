#include "transport/in_process_transport.h"

#include <cstring>

namespace zpp::transport {

sim::Rendezvous& InProcessTransport::GroupRendezvous(const GroupView& group) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = groups_[{group.kind, group.members.front()}];
  if (!slot) slot = std::make_unique<sim::Rendezvous>(static_cast<int>(group.members.size()));
  return *slot;
}

sim::Rendezvous& InProcessTransport::PairRendezvous(int from, int to) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = pairs_[{from, to}];
  if (!slot) slot = std::make_unique<sim::Rendezvous>(2);
  return *slot;
}

Result InProcessTransport::AllGather(int, const GroupView& group, uint64_t sequence,
                                     const void* send, void* recv, size_t bytes) {
  sim::Rendezvous& rendezvous = GroupRendezvous(group);
  const sim::Rendezvous::Buffers& all = rendezvous.Arrive(sequence, group.my_index, send, recv);
  for (size_t peer = 0; peer < group.members.size(); ++peer) {
    char* dst = static_cast<char*>(recv) + peer * bytes;
    if (all.send[peer] != dst) std::memmove(dst, all.send[peer], bytes);
  }
  rendezvous.Depart(sequence);
  return ncclSuccess;
}

Result InProcessTransport::AllToAll(int, const GroupView& group, uint64_t sequence,
                                    const void* send, void* recv, size_t bytes) {
  sim::Rendezvous& rendezvous = GroupRendezvous(group);
  const sim::Rendezvous::Buffers& all = rendezvous.Arrive(sequence, group.my_index, send, recv);
  for (size_t peer = 0; peer < group.members.size(); ++peer) {
    const char* src = static_cast<const char*>(all.send[peer]) + group.my_index * bytes;
    std::memcpy(static_cast<char*>(recv) + peer * bytes, src, bytes);
  }
  // Every member has read this rank's send buffer: it may be overwritten (in-place callers).
  rendezvous.Depart(sequence);
  return ncclSuccess;
}

// A message meets its receive in a two-member rendezvous: member 0 the sender, 1 the receiver.
Result InProcessTransport::Send(int rank, GroupKind, int to, uint64_t sequence, const void* send,
                                size_t) {
  sim::Rendezvous& pair = PairRendezvous(rank, to);
  pair.Arrive(sequence, 0, send, nullptr);
  pair.Depart(sequence);  // the receiver has copied: the send buffer may be reused
  return ncclSuccess;
}

Result InProcessTransport::Recv(int rank, GroupKind, int from, uint64_t sequence, void* recv,
                                size_t bytes) {
  sim::Rendezvous& pair = PairRendezvous(from, rank);
  const sim::Rendezvous::Buffers& both = pair.Arrive(sequence, 1, nullptr, recv);
  std::memcpy(recv, both.send[0], bytes);
  pair.Depart(sequence);
  return ncclSuccess;
}

}  // namespace zpp::transport
