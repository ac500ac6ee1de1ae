#include "sim/sim_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <thread>

namespace zpp::sim {
namespace {

class SimMemory final : public DeviceMemory {
 public:
  explicit SimMemory(size_t bytes)
      : size_(bytes),
        data_(static_cast<char*>(::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{256}))) {
    // Poison: fresh device memory holds garbage, and NaN-filled floats make unwritten
    // elements visible in every comparison.
    std::memset(data_, 0xff, bytes);
  }
  ~SimMemory() override { ::operator delete (data_, std::align_val_t{256}); }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  size_t size_;
  char* data_;
};

SimStream& AsSim(Stream& stream) { return static_cast<SimStream&>(stream); }
SimEvent& AsSim(Event& event) { return static_cast<SimEvent&>(event); }

}  // namespace

SimBackend::SimBackend(SimWorld& world, int rank) : world_(world), rank_(rank) {
  for (int kind = 0; kind < kGroupKinds; ++kind) {
    Group& g = groups_[kind];
    g.members = world.layout().GroupOf(rank, static_cast<GroupKind>(kind));
    for (size_t i = 0; i < g.members.size(); ++i) {
      if (g.members[i] == rank) g.my_index = static_cast<int>(i);
    }
  }
}

Result SimBackend::Allocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
  *out = std::make_unique<SimMemory>(bytes);
  return ncclSuccess;
}

Result SimBackend::CreateStream(std::unique_ptr<Stream>* out) {
  *out = std::make_unique<SimStream>();
  return ncclSuccess;
}

Result SimBackend::CreateEvent(std::unique_ptr<Event>* out) {
  *out = std::make_unique<SimEvent>();
  return ncclSuccess;
}

Result SimBackend::RecordEvent(Event& event, Stream& stream) {
  AsSim(event).Record(AsSim(stream));
  return ncclSuccess;
}

Result SimBackend::StreamWaitEvent(Stream& stream, Event& event) {
  AsSim(event).MakeStreamWait(AsSim(stream));
  return ncclSuccess;
}

void SimBackend::Delay() const {
  if (work_delay_.count() > 0) std::this_thread::sleep_for(work_delay_);
}

Result SimBackend::Memcpy(void* dst, const void* src, size_t bytes, Stream& stream) {
  AsSim(stream).Enqueue([this, dst, src, bytes] {
    Delay();
    std::memmove(dst, src, bytes);
  });
  return ncclSuccess;
}

void SimBackend::Launch(Stream& stream, std::function<void()> work) {
  AsSim(stream).Enqueue([this, work = std::move(work)] {
    Delay();
    work();
  });
}

void SimBackend::Synchronize(Stream& stream) {
  world_.CountHostSync();
  AsSim(stream).Synchronize();
}

Result SimBackend::AllGather(const void* send, void* recv, size_t bytes, GroupKind kind,
                             Stream& stream) {
  Group& g = group(kind);
  const uint64_t sequence = g.next_sequence++;
  // Counted as NCCL's rings move it: this rank's piece enters every other node of the group
  // once, then spreads to the other members of each node.
  std::set<int> other_nodes;
  const ClusterLayout& layout = world_.layout();
  for (int member : g.members) {
    if (layout.node_of_rank[member] != layout.node_of_rank[rank_]) {
      if (other_nodes.insert(layout.node_of_rank[member]).second) {
        world_.CountSent(rank_, layout.LinkBetween(rank_, member), bytes);
      }
    }
  }
  const uint64_t spread = (g.members.size() - 1 - other_nodes.size()) * bytes;
  world_.CountSent(rank_, zppLinkIntraNode, spread);

  Rendezvous& rendezvous = world_.RendezvousOf(kind, g.members.front());
  const int me = g.my_index;
  const int size = static_cast<int>(g.members.size());
  AsSim(stream).Enqueue([&rendezvous, sequence, me, size, send, recv, bytes] {
    const Rendezvous::Buffers& all = rendezvous.Arrive(sequence, me, send, recv);
    for (int peer = 0; peer < size; ++peer) {
      char* dst = static_cast<char*>(recv) + peer * bytes;
      if (all.send[peer] != dst) std::memmove(dst, all.send[peer], bytes);
    }
    rendezvous.Depart(sequence);
  });
  return ncclSuccess;
}

Result SimBackend::AllToAll(const void* send, void* recv, size_t bytes, GroupKind kind,
                            Stream& stream) {
  Group& g = group(kind);
  const uint64_t sequence = g.next_sequence++;
  for (int member : g.members) {
    if (member != rank_) world_.CountSent(rank_, world_.layout().LinkBetween(rank_, member), bytes);
  }
  Rendezvous& rendezvous = world_.RendezvousOf(kind, g.members.front());
  const int me = g.my_index;
  const int size = static_cast<int>(g.members.size());
  AsSim(stream).Enqueue([&rendezvous, sequence, me, size, send, recv, bytes] {
    const Rendezvous::Buffers& all = rendezvous.Arrive(sequence, me, send, recv);
    for (int peer = 0; peer < size; ++peer) {
      const char* src = static_cast<const char*>(all.send[peer]) + me * bytes;
      std::memcpy(static_cast<char*>(recv) + peer * bytes, src, bytes);
    }
    rendezvous.Depart(sequence);
  });
  return ncclSuccess;
}

}  // namespace zpp::sim
