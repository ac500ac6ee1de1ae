#include "fence/buffer_pool.h"

#include <gtest/gtest.h>

#include "sim/sim_backend.h"

namespace zpp {
namespace {

using sim::ClusterLayout;
using sim::SimBackend;
using sim::SimWorld;

TEST(BufferPoolTest, ReusesReturnedBuffersOfTheSameClass) {
  SimWorld world(ClusterLayout::Uniform(1, 1));
  world.RunRanks([&](SimBackend& backend) {
    BufferPool pool(backend, true);
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

TEST(BufferPoolTest, LeaseMovesOwnership) {
  SimWorld world(ClusterLayout::Uniform(1, 1));
  world.RunRanks([&](SimBackend& backend) {
    BufferPool pool(backend, true);
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
