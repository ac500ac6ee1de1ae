// The sim counts the bytes of a collective "as NCCL's rings move them" (each rank's piece enters
// every other node once); these tests watch what the transport really carries between ranks and
// hold the two equal per link class, for the world's all-gather and reduce-scatter, which a flat
// exchange would carry to every rank of another node separately. On the shaped testbed the same
// equality is checked against the wire itself (tests/net).
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <mutex>
#include <vector>

#include "sim/sim_backend.h"
#include "sim/sim_world.h"
#include "transport/in_process_transport.h"

namespace zpp::sim {
namespace {

// The in-process transport, counting what each rank hands it for each other rank (every group
// collective is an ExchangeParts).
class WatchedTransport final : public transport::Transport {
 public:
  explicit WatchedTransport(const ClusterLayout& layout)
      : layout_(layout), carried_(static_cast<size_t>(layout.world_size())) {}

  Result ExchangeParts(int rank, const transport::GroupView& group, uint64_t sequence, size_t parts,
                       size_t bytes, const PartAt& send_at, const PartInto& recv_at,
                       const char* what) override {
    Carry(rank, group, parts * bytes);
    return inner_.ExchangeParts(rank, group, sequence, parts, bytes, send_at, recv_at, what);
  }
  Result Send(int rank, GroupKind kind, int to, uint64_t sequence, const void* send,
              size_t bytes) override {
    Add(rank, layout_.LinkBetween(rank, to), bytes);
    return inner_.Send(rank, kind, to, sequence, send, bytes);
  }
  Result Recv(int rank, GroupKind kind, int from, uint64_t sequence, void* recv,
              size_t bytes) override {
    return inner_.Recv(rank, kind, from, sequence, recv, bytes);
  }

  uint64_t Carried(int rank, zppLink_t link) {
    std::lock_guard<std::mutex> lock(mutex_);
    return carried_[static_cast<size_t>(rank)][link];
  }

 private:
  void Carry(int rank, const transport::GroupView& group, size_t bytes) {
    for (int member : group.members) {
      if (member != rank) Add(rank, layout_.LinkBetween(rank, member), bytes);
    }
  }
  void Add(int rank, zppLink_t link, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    carried_[static_cast<size_t>(rank)][link] += bytes;
  }

  const ClusterLayout layout_;
  transport::InProcessTransport inner_;
  std::mutex mutex_;
  std::vector<std::array<uint64_t, zppNumLinks>> carried_;
};

struct Case {
  const char* name;
  ClusterLayout layout;
};

std::vector<Case> Layouts() {
  ClusterLayout interleaved;  // ranks 0 and 2 on node 0, 1 and 3 on node 1
  interleaved.node_of_rank = {0, 1, 0, 1};
  interleaved.rack_of_node = {0, 0};
  return {{"2 nodes x 2", ClusterLayout::Uniform(2, 2)},
          {"3 nodes x 4", ClusterLayout::Uniform(3, 4)},
          {"2 racks x 2 nodes x 2", ClusterLayout::Uniform(4, 2, 2)},
          {"interleaved 2 x 2", interleaved}};
}

void ExpectCarriedAsCounted(const ClusterLayout& layout, WatchedTransport& transport,
                            SimWorld& world, const char* what) {
  for (int rank = 0; rank < layout.world_size(); ++rank) {
    for (int link = 0; link < zppNumLinks; ++link) {
      const auto kind = static_cast<zppLink_t>(link);
      EXPECT_EQ(transport.Carried(rank, kind), world.SentBytes(rank, kind))
          << what << ": rank " << rank << ", link class " << link;
    }
  }
}

TEST(SimWireBytesTest, WorldAllGatherCarriesWhatItCounts) {
  for (const Case& c : Layouts()) {
    SCOPED_TRACE(c.name);
    auto transport = std::make_shared<WatchedTransport>(c.layout);
    SimWorld world(c.layout, transport);
    const int ranks = c.layout.world_size();
    constexpr size_t kElements = 37;
    world.RunRanks([&](SimBackend& backend) {
      std::unique_ptr<Stream> stream;
      ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
      std::vector<int32_t> recv(kElements * ranks, -1);
      // In place, as FSDP2 gathers: this rank's piece already sits at its slot.
      int32_t* mine = recv.data() + kElements * backend.rank();
      for (size_t i = 0; i < kElements; ++i) mine[i] = backend.rank() * 1000 + static_cast<int>(i);
      ASSERT_EQ(backend.AllGather(mine, recv.data(), kElements * sizeof(int32_t), GroupKind::kWorld,
                                  *stream),
                ncclSuccess);
      backend.Synchronize(*stream);
      for (int owner = 0; owner < ranks; ++owner) {
        for (size_t i = 0; i < kElements; ++i) {
          ASSERT_EQ(recv[owner * kElements + i], owner * 1000 + static_cast<int>(i))
              << "rank " << backend.rank() << ", piece " << owner;
        }
      }
    });
    ExpectCarriedAsCounted(c.layout, *transport, world, "all-gather");
  }
}

TEST(SimWireBytesTest, WorldReduceScatterCarriesWhatItCountsAndSums) {
  for (const Case& c : Layouts()) {
    SCOPED_TRACE(c.name);
    auto transport = std::make_shared<WatchedTransport>(c.layout);
    SimWorld world(c.layout, transport);
    const int ranks = c.layout.world_size();
    constexpr size_t kCount = 29;
    world.RunRanks([&](SimBackend& backend) {
      std::unique_ptr<Stream> stream;
      ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
      // Small integers: every order of summation gives the exact sum.
      std::vector<float> send(kCount * ranks);
      for (size_t i = 0; i < send.size(); ++i) {
        send[i] = static_cast<float>((backend.rank() + 1) * static_cast<int>(i % 101));
      }
      std::vector<float> recv(kCount, -1.0f);
      ASSERT_EQ(backend.ReduceScatter(send.data(), recv.data(), kCount, ncclFloat32, 0.5f,
                                      GroupKind::kWorld, *stream),
                ncclSuccess);
      backend.Synchronize(*stream);
      const float ranks_sum = static_cast<float>(ranks * (ranks + 1) / 2);
      for (size_t i = 0; i < kCount; ++i) {
        const size_t global = backend.rank() * kCount + i;
        ASSERT_EQ(recv[i], 0.5f * ranks_sum * static_cast<float>(global % 101))
            << "rank " << backend.rank() << ", element " << i;
      }
    });
    ExpectCarriedAsCounted(c.layout, *transport, world, "reduce-scatter");
  }
}

}  // namespace
}  // namespace zpp::sim
