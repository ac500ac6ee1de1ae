// The bits each plan runs at are the settings' bits for that level: qgZ's intra-node stage at
// ZPP_QGZ_BITS_INTRA and its cross-node stages at ZPP_QGZ_BITS_INTER (the flat plan has only
// the latter), qwZ at ZPP_QWZ_BITS, and hpZ alone unquantized. Every combination, so that a
// planner that takes one level's bits for the other cannot pass on the defaults' 8/4 alone.
#include <gtest/gtest.h>

#include "plan/planner.h"
#include "sim/cluster_layout.h"

namespace zpp::plan {
namespace {

// The shape of a simulated cluster of `nodes` x `locals` ranks in `racks` racks.
Shape Cluster(int nodes, int locals, int racks = 1) {
  return sim::ShapeOf(sim::ClusterLayout::Uniform(nodes, locals, racks));
}

constexpr uint64_t kCount = uint64_t{1} << 20;

TEST(PlannerBitsTest, QgzLevelsRunAtTheirOwnSettings) {
  const Call call{CollectiveOp::kReduceScatter, kCount, ncclBfloat16, Reduction::kSum};
  for (int intra : {4, 8}) {
    for (int inter : {4, 8}) {
      Settings s;
      s.qgz = true;
      s.qgz_bits_intra = intra;
      s.qgz_bits_inter = inter;
      for (int block : {32, 256}) {
        s.block = block;
        const Plan hierarchical = MakePlan(call, Cluster(2, 4), s, {});
        ASSERT_EQ(hierarchical.kind, PlanKind::kQgzHierarchicalReduceScatter);
        EXPECT_EQ(hierarchical.bits_intra, intra) << intra << "/" << inter;
        EXPECT_EQ(hierarchical.bits_inter, inter) << intra << "/" << inter;
        EXPECT_EQ(hierarchical.block, block);

        const Plan three = MakePlan(call, Cluster(4, 2, 2), s, {});
        ASSERT_EQ(three.kind, PlanKind::kQgzThreeLevelReduceScatter);
        EXPECT_EQ(three.bits_intra, intra) << intra << "/" << inter;
        EXPECT_EQ(three.bits_inter, inter) << intra << "/" << inter;

        // Flat (one rank per node, so no hierarchy): one all-to-all over all ranks, across
        // nodes, so at the inter bits only.
        const Plan flat = MakePlan(call, Cluster(4, 1), s, {});
        ASSERT_EQ(flat.kind, PlanKind::kQgzFlatReduceScatter);
        EXPECT_EQ(flat.bits_intra, inter) << intra << "/" << inter;
        EXPECT_EQ(flat.bits_inter, inter) << intra << "/" << inter;
      }
    }
  }
}

TEST(PlannerBitsTest, QwzAndHpzRunAtTheirSettings) {
  const Call call{CollectiveOp::kAllGather, kCount, ncclBfloat16, Reduction::kNone};
  for (int bits : {4, 8}) {
    Settings qwz;
    qwz.qwz = true;
    qwz.qwz_bits = bits;
    qwz.qgz_bits_intra = 12 - bits;  // the other width: qgZ's settings must not leak in
    qwz.qgz_bits_inter = 12 - bits;
    const Plan flat = MakePlan(call, Cluster(2, 4), qwz, {});
    ASSERT_EQ(flat.kind, PlanKind::kQwzFlatAllGather);
    EXPECT_EQ(flat.bits_inter, bits);
    Settings both = qwz;
    both.hpz = true;
    for (bool hit : {false, true}) {
      const Plan hierarchical = MakePlan(call, Cluster(2, 4), both, HpzState{hit});
      EXPECT_EQ(hierarchical.bits_inter, bits) << hit;  // the kept partition holds pieces
    }
  }
  Settings hpz;
  hpz.hpz = true;
  for (bool hit : {false, true}) {
    const Plan plan = MakePlan(call, Cluster(2, 4), hpz, HpzState{hit});
    EXPECT_NE(plan.kind, PlanKind::kPassThrough);
    EXPECT_EQ(plan.bits_inter, 0) << hit;
  }
}

}  // namespace
}  // namespace zpp::plan
