#include "sim/sim_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/engine.h"
#include "log/log.h"

namespace zpp::sim {
namespace {

std::vector<float> Piece(int rank, size_t count) {
  std::vector<float> piece(count);
  for (size_t i = 0; i < count; ++i) piece[i] = static_cast<float>(rank * 1000 + i);
  return piece;
}

TEST(SimBackendTest, AllGatherOnWorldAndSubGroups) {
  SimWorld world(ClusterLayout::Uniform(2, 4));
  constexpr size_t kCount = 37;
  std::atomic<int> failures{0};
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    const std::vector<float> mine = Piece(backend.rank(), kCount);
    for (GroupKind kind : {GroupKind::kWorld, GroupKind::kIntraNode, GroupKind::kInterNode}) {
      const int size = backend.GroupSize(kind);
      std::vector<float> out(size * kCount, -1.0f);
      ASSERT_EQ(backend.AllGather(mine.data(), out.data(), kCount * sizeof(float), kind, *stream),
                ncclSuccess);
      backend.Synchronize(*stream);
      const std::vector<int> members = world.layout().GroupOf(backend.rank(), kind);
      for (int i = 0; i < size; ++i) {
        const std::vector<float> expected = Piece(members[i], kCount);
        if (!std::equal(expected.begin(), expected.end(), out.begin() + i * kCount)) ++failures;
      }
    }
  });
  EXPECT_EQ(failures.load(), 0);
}

TEST(SimBackendTest, InPlaceAllGather) {
  SimWorld world(ClusterLayout::Uniform(1, 4));
  constexpr size_t kCount = 16;
  std::atomic<int> failures{0};
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    std::vector<float> buffer(4 * kCount, -1.0f);
    const std::vector<float> mine = Piece(backend.rank(), kCount);
    std::copy(mine.begin(), mine.end(), buffer.begin() + backend.rank() * kCount);
    const void* send = buffer.data() + backend.rank() * kCount;
    ASSERT_EQ(
        backend.AllGather(send, buffer.data(), kCount * sizeof(float), GroupKind::kWorld, *stream),
        ncclSuccess);
    backend.Synchronize(*stream);
    for (int r = 0; r < 4; ++r) {
      const std::vector<float> expected = Piece(r, kCount);
      if (!std::equal(expected.begin(), expected.end(), buffer.begin() + r * kCount)) ++failures;
    }
  });
  EXPECT_EQ(failures.load(), 0);
}

TEST(SimBackendTest, AllToAllDeliversPieceJToRankJ) {
  SimWorld world(ClusterLayout::Uniform(2, 2));
  std::atomic<int> failures{0};
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    const int n = backend.world_size();
    std::vector<int> send(n), recv(n, -1);
    for (int j = 0; j < n; ++j) send[j] = backend.rank() * 10 + j;  // "from rank, to j"
    ASSERT_EQ(backend.AllToAll(send.data(), recv.data(), sizeof(int), GroupKind::kWorld, *stream),
              ncclSuccess);
    backend.Synchronize(*stream);
    for (int j = 0; j < n; ++j) {
      if (recv[j] != j * 10 + backend.rank()) ++failures;
    }
  });
  EXPECT_EQ(failures.load(), 0);
}

// Plain all-gather bytes, counted as NCCL's rings move them: each rank's piece enters every
// other node once ((nodes - 1) x piece inter-node), then spreads inside each node.
TEST(SimBackendTest, CountsAllGatherBytesPerLinkClass) {
  SimWorld world(ClusterLayout::Uniform(4, 2, 2));  // 2 racks x 2 nodes x 2 ranks
  constexpr size_t kBytes = 1000;
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    std::vector<char> send(kBytes), recv(8 * kBytes);
    ASSERT_EQ(backend.AllGather(send.data(), recv.data(), kBytes, GroupKind::kWorld, *stream),
              ncclSuccess);
    backend.Synchronize(*stream);
  });
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(world.SentBytes(rank, zppLinkInterNode), 1 * kBytes);  // the other node in rack
    EXPECT_EQ(world.SentBytes(rank, zppLinkInterRack), 2 * kBytes);  // two nodes in other rack
    EXPECT_EQ(world.SentBytes(rank, zppLinkIntraNode), 4 * kBytes);  // 1 more rank on 4 nodes
  }
  // Total per rank is (n - 1) pieces, as in a ring.
  EXPECT_EQ(world.TotalSentBytes(zppLinkIntraNode) + world.TotalSentBytes(zppLinkInterNode) +
                world.TotalSentBytes(zppLinkInterRack),
            8u * 7u * kBytes);
}

TEST(SimBackendTest, CountsAllToAllBytesPerPeer) {
  SimWorld world(ClusterLayout::Uniform(2, 4));
  constexpr size_t kBytes = 64;
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    std::vector<char> send(8 * kBytes), recv(8 * kBytes);
    ASSERT_EQ(backend.AllToAll(send.data(), recv.data(), kBytes, GroupKind::kWorld, *stream),
              ncclSuccess);
    backend.Synchronize(*stream);
  });
  EXPECT_EQ(world.SentBytes(0, zppLinkIntraNode), 3 * kBytes);
  EXPECT_EQ(world.SentBytes(0, zppLinkInterNode), 4 * kBytes);
}

TEST(SimEventTest, WaitBlocksOnlyTheWaitingStream) {
  SimWorld world(ClusterLayout::Uniform(1, 1));
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> slow, fast, waiter;
    std::unique_ptr<Event> event;
    ASSERT_EQ(backend.CreateStream(&slow), ncclSuccess);
    ASSERT_EQ(backend.CreateStream(&fast), ncclSuccess);
    ASSERT_EQ(backend.CreateStream(&waiter), ncclSuccess);
    ASSERT_EQ(backend.CreateEvent(&event), ncclSuccess);
    std::atomic<bool> slow_done{false}, fast_done{false}, waiter_saw_slow{false};
    backend.Launch(*slow, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      slow_done = true;
    });
    ASSERT_EQ(backend.RecordEvent(*event, *slow), ncclSuccess);
    ASSERT_EQ(backend.StreamWaitEvent(*waiter, *event), ncclSuccess);
    backend.Launch(*waiter, [&] { waiter_saw_slow = slow_done.load(); });
    backend.Launch(*fast, [&] { fast_done = true; });
    backend.Synchronize(*fast);
    EXPECT_TRUE(fast_done.load());
    EXPECT_FALSE(slow_done.load());  // the host was not blocked by the wait
    backend.Synchronize(*waiter);
    EXPECT_TRUE(waiter_saw_slow.load());
  });
}

TEST(SimEventTest, WaitOnUnrecordedEventIsSatisfied) {
  SimWorld world(ClusterLayout::Uniform(1, 1));
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> event;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    ASSERT_EQ(backend.CreateEvent(&event), ncclSuccess);
    ASSERT_EQ(backend.StreamWaitEvent(*stream, *event), ncclSuccess);
    bool ran = false;
    backend.Launch(*stream, [&] { ran = true; });
    backend.Synchronize(*stream);
    EXPECT_TRUE(ran);
  });
  EXPECT_EQ(world.host_synchronizations(), 1u);
}

}  // namespace
}  // namespace zpp::sim

namespace zpp::sim {
namespace {

// A ring of sends and receives on each node, in both directions, on one stream per rank: every
// receive gets its peer's message, matched in order, and the bytes are counted per link.
TEST(SimBackendTest, SendRecvMatchInOrderPerPair) {
  SimWorld world(ClusterLayout::Uniform(2, 2));
  std::atomic<int> failures{0};
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> send_stream, recv_stream;
    ASSERT_EQ(backend.CreateStream(&send_stream), ncclSuccess);
    ASSERT_EQ(backend.CreateStream(&recv_stream), ncclSuccess);
    const int n = backend.world_size();
    const int next = (backend.rank() + 1) % n;
    const int previous = (backend.rank() + n - 1) % n;
    std::vector<int> first = {backend.rank(), 1}, second = {backend.rank(), 2};
    std::vector<int> got_first(2, -1), got_second(2, -1);
    ASSERT_EQ(backend.Send(first.data(), 8, next, GroupKind::kWorld, *send_stream), ncclSuccess);
    ASSERT_EQ(backend.Send(second.data(), 8, next, GroupKind::kWorld, *send_stream), ncclSuccess);
    ASSERT_EQ(backend.Recv(got_first.data(), 8, previous, GroupKind::kWorld, *recv_stream),
              ncclSuccess);
    ASSERT_EQ(backend.Recv(got_second.data(), 8, previous, GroupKind::kWorld, *recv_stream),
              ncclSuccess);
    EXPECT_EQ(backend.Send(first.data(), 8, n, GroupKind::kWorld, *send_stream),
              ncclInvalidArgument);
    backend.Synchronize(*send_stream);
    backend.Synchronize(*recv_stream);
    if (got_first != std::vector<int>{previous, 1}) ++failures;
    if (got_second != std::vector<int>{previous, 2}) ++failures;
  });
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(world.SentBytes(0, zppLinkIntraNode), 16u);  // rank 0 -> 1, same node
  EXPECT_EQ(world.SentBytes(1, zppLinkInterNode), 16u);  // rank 1 -> 2, other node
}

}  // namespace
}  // namespace zpp::sim

namespace zpp::sim {
namespace {

// The stream-order checker (sim/stream_order_checker.h): decided by records and waits only. The
// work itself never races (host waits order what the checker is told to ignore), so that TSan
// runs this too.
TEST(StreamOrderCheckerTest, OrdersByStreamsAndEventsNeverByHostWaits) {
  SimWorld world(ClusterLayout::Uniform(1, 1));
  world.RunRanks([&](SimBackend& backend) {
    backend.EnableStreamOrderCheckForTesting();
    std::unique_ptr<Stream> a, b;
    std::unique_ptr<Event> event;
    ASSERT_EQ(backend.CreateStream(&a), ncclSuccess);
    ASSERT_EQ(backend.CreateStream(&b), ncclSuccess);
    ASSERT_EQ(backend.CreateEvent(&event), ncclSuccess);
    std::unique_ptr<DeviceMemory> buffer, other;
    ASSERT_EQ(backend.Allocate(256, &buffer), ncclSuccess);
    ASSERT_EQ(backend.Allocate(256, &other), ncclSuccess);
    auto* bytes = static_cast<std::byte*>(buffer->data());
    const StreamOrderChecker& order = *backend.stream_order();
    const std::vector<std::byte> source(256);
    std::vector<std::byte> read_on_a(256), read_on_b(256), caller(32);

    // Same stream: ordered. Reads on two streams: no conflict.
    ASSERT_EQ(backend.CopyFromHost(bytes, source.data(), 256, *a), ncclSuccess);
    ASSERT_EQ(backend.Memcpy(other->data(), bytes, 256, *a), ncclSuccess);
    ASSERT_EQ(backend.RecordEvent(*event, *a), ncclSuccess);
    ASSERT_EQ(backend.StreamWaitEvent(*b, *event), ncclSuccess);
    ASSERT_EQ(backend.Memcpy(read_on_b.data(), bytes, 256, *b), ncclSuccess);
    ASSERT_EQ(backend.Memcpy(read_on_a.data(), bytes, 128, *a), ncclSuccess);
    EXPECT_EQ(order.violation_count(), 0u);

    // A write on b after a's read with only a host wait between: flagged.
    backend.Synchronize(*a);
    ASSERT_EQ(backend.CopyFromHost(bytes, source.data(), 64, *b), ncclSuccess);
    EXPECT_EQ(order.violation_count(), 1u);
    // Bytes a's read did not touch: no conflict (hpZ's fingerprint slots, written by calls on
    // different streams).
    ASSERT_EQ(backend.CopyFromHost(bytes + 192, source.data(), 64, *b), ncclSuccess);
    EXPECT_EQ(order.violation_count(), 1u);
    // Ordered through an event: none.
    ASSERT_EQ(backend.RecordEvent(*event, *b), ncclSuccess);
    ASSERT_EQ(backend.StreamWaitEvent(*a, *event), ncclSuccess);
    ASSERT_EQ(backend.CopyFromHost(bytes, source.data(), 256, *a), ncclSuccess);
    EXPECT_EQ(order.violation_count(), 1u) << order.violations().back();
    // Memory the caller owns is the caller's to order.
    backend.Synchronize(*a);
    ASSERT_EQ(backend.Memcpy(caller.data() + 16, caller.data(), 16, *b), ncclSuccess);
    backend.Synchronize(*b);
    ASSERT_EQ(backend.Memcpy(caller.data(), caller.data() + 16, 16, *a), ncclSuccess);
    EXPECT_EQ(order.violation_count(), 1u);
    backend.Synchronize(*a);
    backend.Synchronize(*b);
  });
}

}  // namespace
}  // namespace zpp::sim

namespace zpp::sim {
namespace {

// Issue 29, item 9: a TRACE line names the call's dtype and a pass-through's reason.
TEST(EngineTraceTest, TraceNamesTheDtypeAndThePassThroughReason) {
  std::vector<std::string> lines;
  GetConfig();  // the process configuration sets the logger once: before this test's settings
  log::Settings settings;
  settings.level = log::Level::kTrace;
  settings.subsys_mask = log::kAll;
  log::Configure(settings);
  log::SetSinkForTesting([&lines](std::string_view line) { lines.emplace_back(line); });
  SimWorld world(ClusterLayout::Uniform(2, 2));
  world.RunRanks([&](SimBackend& backend) {
    StatsCounters stats;
    engine::EngineOptions options;
    options.settings.qwz = true;  // 1 MiB ZPP_MIN_BYTES: the call below is small
    engine::Engine engine(backend, ShapeOf(world.layout()), options, stats);
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    std::vector<uint16_t> send(16), recv(16 * 4);
    ASSERT_EQ(engine.AllGather({send.data(), recv.data(), 16, ncclBfloat16}, *stream), ncclSuccess);
    backend.Synchronize(*stream);
  });
  log::SetSinkForTesting(nullptr);
  log::Configure(log::Settings{});
  const bool found = std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find("allgather count 16 bf16: pass-through (small)") != std::string::npos;
  });
  EXPECT_TRUE(found) << (lines.empty() ? std::string("no lines") : lines.front());
}

}  // namespace
}  // namespace zpp::sim
