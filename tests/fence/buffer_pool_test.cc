#include "fence/buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "sim/sim_backend.h"

namespace zpp {
namespace {

using sim::ClusterLayout;
using sim::SimBackend;
using sim::SimWorld;

// The body runs with one rank's on-demand pool (the sim backend allocates what it asks).
void WithPool(const std::function<void(BufferPool&)>& body) {
  SimWorld world(ClusterLayout::Uniform(1, 1));
  world.RunRanks([&](SimBackend& backend) {
    BufferPool pool(backend, true);
    body(pool);
  });
}

TEST(BufferPoolTest, ReusesReturnedBuffersOfTheSameClass) {
  WithPool([](BufferPool& pool) {
    void* first = nullptr;
    {
      BufferLease lease;
      ASSERT_EQ(pool.Take(5000, &lease), ncclSuccess);
      EXPECT_GE(lease.size(), 5000u);
      first = lease.data();
    }
    BufferLease again;
    ASSERT_EQ(pool.Take(6000, &again), ncclSuccess);  // same 8 KiB class
    EXPECT_EQ(again.data(), first);
    BufferLease second;
    ASSERT_EQ(pool.Take(6000, &second), ncclSuccess);  // the first is still leased
    EXPECT_NE(second.data(), first);
    EXPECT_EQ(pool.buffers_allocated(), 2u);
    EXPECT_EQ(pool.bytes_allocated(), 2u * 8192u);
  });
}

TEST(BufferPoolTest, BuffersExceedTheirRequestByLessThanAnEighth) {
  WithPool([](BufferPool& pool) {
    // hpZ's kept partitions under DeepSpeed (bench/results/convergence_cpu.md): 720896 bytes
    // each, which a power-of-two class rounded to 1 MiB.
    std::vector<BufferLease> leases(4);
    for (auto& lease : leases) ASSERT_EQ(pool.Take(720896, &lease), ncclSuccess);
    EXPECT_EQ(pool.bytes_allocated(), 4u * 720896u);
    for (const size_t bytes :
         {size_t{32769}, size_t{65537}, size_t{1000001}, (size_t{3} << 20) + 1}) {
      BufferLease lease;
      ASSERT_EQ(pool.Take(bytes, &lease), ncclSuccess);
      EXPECT_GE(lease.size(), bytes);
      EXPECT_LT(lease.size(), bytes + bytes / 8) << bytes;
      EXPECT_EQ(lease.size() % 4096, 0u) << bytes;  // carved offsets keep the page alignment
    }
  });
}

TEST(BufferPoolTest, AFreeBufferServesRequestsOfAtLeastHalfItsSizeSmallestFirst) {
  WithPool([](BufferPool& pool) {
    void* large = nullptr;
    void* medium = nullptr;
    {
      BufferLease a, b;
      ASSERT_EQ(pool.Take(1 << 20, &a), ncclSuccess);
      ASSERT_EQ(pool.Take(600 << 10, &b), ncclSuccess);
      large = a.data();
      medium = b.data();
    }
    BufferLease fits_both;
    ASSERT_EQ(pool.Take(550 << 10, &fits_both), ncclSuccess);
    EXPECT_EQ(fits_both.data(), medium);  // the smaller of the two that fit
    BufferLease half;
    ASSERT_EQ(pool.Take(512 << 10, &half), ncclSuccess);
    EXPECT_EQ(half.data(), large);
    half = BufferLease();
    BufferLease under_half;
    ASSERT_EQ(pool.Take((512 << 10) - 4096, &under_half), ncclSuccess);
    EXPECT_NE(under_half.data(), large);  // would waste more than half: carves its own
    EXPECT_EQ(pool.buffers_allocated(), 3u);
  });
}

TEST(BufferPoolTest, TakingIntoAHeldLeaseReturnsItFirst) {
  WithPool([](BufferPool& pool) {
    BufferLease lease;
    ASSERT_EQ(pool.Take(8192, &lease), ncclSuccess);
    void* first = lease.data();
    // Returned before the pool's lock is taken (it used to be returned under it: a self-deadlock).
    ASSERT_EQ(pool.Take(8192, &lease), ncclSuccess);
    EXPECT_EQ(lease.data(), first);
    EXPECT_EQ(pool.buffers_allocated(), 1u);
  });
}

TEST(BufferPoolTest, LeaseMovesOwnership) {
  WithPool([](BufferPool& pool) {
    BufferLease a;
    ASSERT_EQ(pool.Take(100, &a), ncclSuccess);
    void* data = a.data();
    BufferLease b = std::move(a);
    EXPECT_FALSE(a);
    EXPECT_EQ(b.data(), data);
    b = BufferLease();
    BufferLease c;
    ASSERT_EQ(pool.Take(100, &c), ncclSuccess);
    EXPECT_EQ(c.data(), data);  // returned by the move-assignment
  });
}

}  // namespace
}  // namespace zpp

namespace zpp {
namespace {

// Issue 25, item 3: an aborted communicator's memory is freed once every device use of it ran,
// asked without waiting; the pool answers from its buffers' fences.
TEST(BufferPoolTest, UsesEndedOnlyOnceEveryBuffersDeviceWorkRan) {
  SimWorld world(ClusterLayout::Uniform(1, 1));
  world.RunRanks([&](SimBackend& backend) {
    std::unique_ptr<Stream> slow, fast;
    ASSERT_EQ(backend.CreateStream(&slow), ncclSuccess);
    ASSERT_EQ(backend.CreateStream(&fast), ncclSuccess);
    BufferPool pool(backend, true);
    ASSERT_EQ(pool.Prepare(8), ncclSuccess);
    bool ended = false;
    ASSERT_EQ(pool.UsesEnded(&ended), ncclSuccess);
    EXPECT_TRUE(ended) << "an empty pool";
    std::atomic<bool> release{false};
    BufferLease written, read;
    ASSERT_EQ(pool.Take(4096, &written), ncclSuccess);
    ASSERT_EQ(pool.Take(4096, &read), ncclSuccess);
    ASSERT_EQ(written.fence().BeginWrite(*fast), ncclSuccess);
    ASSERT_EQ(written.fence().EndWrite(*fast), ncclSuccess);
    ASSERT_EQ(read.fence().BeginRead(*slow), ncclSuccess);
    backend.Launch(*slow, [&release] {
      while (!release.load()) std::this_thread::yield();
    });
    ASSERT_EQ(read.fence().EndRead(*slow), ncclSuccess);
    backend.Synchronize(*fast);
    ASSERT_EQ(pool.UsesEnded(&ended), ncclSuccess);
    EXPECT_FALSE(ended) << "a read still runs on the slow stream";
    release = true;
    backend.Synchronize(*slow);
    ASSERT_EQ(pool.UsesEnded(&ended), ncclSuccess);
    EXPECT_TRUE(ended);
  });
}

}  // namespace
}  // namespace zpp
