#include "transport/in_process_transport.h"

#include <cstring>

#include "config/config.h"
#include "log/log.h"

namespace zpp::transport {

InProcessTransport::InProcessTransport() : deadline_(std::chrono::seconds(GetConfig().timeout)) {}

Rendezvous& InProcessTransport::GroupRendezvous(const GroupView& group) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = groups_[{group.kind, group.members.front()}];
  if (!slot) {
    slot = std::make_unique<Rendezvous>(static_cast<int>(group.members.size()), deadline_);
  }
  return *slot;
}

Rendezvous& InProcessTransport::PairRendezvous(int from, int to) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = pairs_[{from, to}];
  if (!slot) slot = std::make_unique<Rendezvous>(2, deadline_);
  return *slot;
}

Result InProcessTransport::Missed(const char* collective, GroupKind kind, int rank,
                                  uint64_t sequence) const {
  ZPP_WARN(
      "sim: rank %d: %s #%llu on its %s group: the other members did not all come within %lld "
      "ms (a rank skipped the call, or the ranks' plans differ); it fails with ncclRemoteError "
      "(raise ZPP_TIMEOUT if the ranks are only slow)",
      rank, collective, static_cast<unsigned long long>(sequence), GroupKindName(kind),
      static_cast<long long>(deadline_.count()));
  return ncclRemoteError;
}

Result InProcessTransport::ExchangeParts(int rank, const GroupView& group, uint64_t sequence,
                                         size_t parts, size_t bytes, const PartAt& send_at,
                                         const PartInto& recv_at, const char* what) {
  Rendezvous& rendezvous = GroupRendezvous(group);
  // The members meet with their part finders: each reads every other's parts addressed to it.
  const Rendezvous::Buffers* all = rendezvous.Arrive(sequence, group.my_index, &send_at, nullptr);
  if (all == nullptr) return Missed(what, group.kind, rank, sequence);
  const auto me = static_cast<size_t>(group.my_index);
  for (size_t member = 0; member < group.members.size(); ++member) {
    const auto& theirs = *static_cast<const PartAt*>(all->send[member]);
    for (size_t part = 0; part < parts; ++part) {
      std::byte* into = recv_at(member, part);
      const std::byte* from = theirs(me, part);
      if (into != nullptr && into != from) std::memmove(into, from, bytes);
    }
  }
  if (!rendezvous.Depart(sequence)) return Missed(what, group.kind, rank, sequence);
  return ncclSuccess;
}

// A message meets its receive in a two-member rendezvous: member 0 the sender, 1 the receiver.
Result InProcessTransport::Send(int rank, GroupKind kind, int to, uint64_t sequence,
                                const void* send, size_t) {
  Rendezvous& pair = PairRendezvous(rank, to);
  // Depart: the receiver has copied, so the send buffer may be reused.
  if (pair.Arrive(sequence, 0, send, nullptr) == nullptr || !pair.Depart(sequence)) {
    return Missed("send", kind, rank, sequence);
  }
  return ncclSuccess;
}

Result InProcessTransport::Recv(int rank, GroupKind kind, int from, uint64_t sequence, void* recv,
                                size_t bytes) {
  Rendezvous& pair = PairRendezvous(from, rank);
  const Rendezvous::Buffers* both = pair.Arrive(sequence, 1, nullptr, recv);
  if (both == nullptr) return Missed("receive", kind, rank, sequence);
  std::memcpy(recv, both->send[0], bytes);
  if (!pair.Depart(sequence)) return Missed("receive", kind, rank, sequence);
  return ncclSuccess;
}

}  // namespace zpp::transport
