#include "plan/planner.h"

#include <gtest/gtest.h>

#include <vector>

#include "zpp/format.h"

namespace zpp::plan {
namespace {

Shape MakeShape(int nodes, int local, int racks = 1) {
  Shape shape;
  shape.world = nodes * local;
  shape.nodes = nodes;
  shape.min_local_size = local;
  shape.racks = racks;
  shape.nodes_per_rack = nodes / racks;
  shape.hierarchical_allowed = nodes > 1 && local > 1;
  shape.rack_level_allowed = shape.hierarchical_allowed && racks > 1;
  return shape;
}

Call AllGather(uint64_t count, ncclDataType_t dtype = ncclBfloat16) {
  return {CollectiveOp::kAllGather, count, dtype, Reduction::kNone};
}
Call ReduceScatter(uint64_t count, ncclDataType_t dtype = ncclBfloat16,
                   Reduction reduction = Reduction::kSum) {
  return {CollectiveOp::kReduceScatter, count, dtype, reduction};
}

Settings ZeroPlusPlus() {
  Settings s;
  s.qwz = true;
  s.hpz = true;
  s.qgz = true;
  return s;
}

constexpr uint64_t kMiB = 1 << 20;

// Issue 29, item 9: log lines name dtypes, not NCCL's numbers.
TEST(PlannerTest, DtypeNamesForLogLines) {
  EXPECT_EQ(DtypeName(ncclFloat32), "fp32");
  EXPECT_EQ(DtypeName(ncclBfloat16), "bf16");
  EXPECT_EQ(DtypeName(ncclFloat16), "fp16");
  EXPECT_EQ(DtypeName(ncclInt8), "int8");
  EXPECT_EQ(DtypeName(ncclUint64), "uint64");
  EXPECT_EQ(DtypeName(static_cast<ncclDataType_t>(42)), "dtype 42");
}

TEST(PlannerTest, PassThroughReasons) {
  const Settings all = ZeroPlusPlus();
  EXPECT_EQ(MakePlan(AllGather(kMiB), MakeShape(1, 1), all, {}).reason, zppReasonOneRank);
  EXPECT_EQ(MakePlan(AllGather(kMiB, ncclInt32), MakeShape(2, 4), all, {}).reason, zppReasonDtype);
  EXPECT_EQ(MakePlan(AllGather(kMiB, ncclFloat64), MakeShape(2, 4), all, {}).reason,
            zppReasonDtype);
  EXPECT_EQ(MakePlan(ReduceScatter(kMiB, ncclFloat32, Reduction::kOther), MakeShape(2, 4), all, {})
                .reason,
            zppReasonRedOp);
  EXPECT_EQ(MakePlan(AllGather(1000), MakeShape(2, 4), all, {}).reason, zppReasonSmall);
  EXPECT_EQ(MakePlan(AllGather(0), MakeShape(2, 4), all, {}).reason, zppReasonSmall);
  EXPECT_EQ(MakePlan(AllGather(kMiB), MakeShape(2, 4), Settings{}, {}).reason, zppReasonDisabled);
  Shape disagreeing = MakeShape(2, 4);
  disagreeing.config_agreed = false;
  EXPECT_EQ(MakePlan(AllGather(kMiB), disagreeing, all, {}).reason, zppReasonConfigMismatch);
  for (const Plan& plan : {MakePlan(AllGather(1000), MakeShape(2, 4), all, {})}) {
    EXPECT_EQ(plan.kind, PlanKind::kPassThrough);
  }
}

TEST(PlannerTest, MinBytesComparesTheWholeBuffer) {
  Settings s;
  s.qwz = true;
  s.min_bytes = 8 * 4096;  // 8 ranks x 4096 bytes
  EXPECT_EQ(MakePlan(AllGather(2048, ncclFloat16), MakeShape(2, 4), s, {}).kind,
            PlanKind::kQwzFlatAllGather);
  EXPECT_EQ(MakePlan(AllGather(2047, ncclFloat16), MakeShape(2, 4), s, {}).reason, zppReasonSmall);
}

TEST(PlannerTest, AllGatherChoices) {
  Settings qwz;
  qwz.qwz = true;
  EXPECT_EQ(MakePlan(AllGather(kMiB), MakeShape(2, 4), qwz, {}).kind, PlanKind::kQwzFlatAllGather);
  const Settings all = ZeroPlusPlus();
  const Plan miss = MakePlan(AllGather(kMiB), MakeShape(2, 4), all, {});
  EXPECT_EQ(miss.kind, PlanKind::kHierarchicalAllGather);
  EXPECT_EQ(miss.bits_inter, 8);
  const Plan hit = MakePlan(AllGather(kMiB), MakeShape(2, 4), all, HpzState{true});
  EXPECT_EQ(hit.kind, PlanKind::kHpzHitAllGather);
  EXPECT_EQ(hit.off_node_bytes, 0u);
  // hpZ without a usable hierarchy: qwZ still runs flat; hpZ alone passes through.
  Shape uneven = MakeShape(2, 4);
  uneven.hierarchical_allowed = false;
  EXPECT_EQ(MakePlan(AllGather(kMiB), uneven, all, HpzState{true}).kind,
            PlanKind::kQwzFlatAllGather);
  Settings hpz_only;
  hpz_only.hpz = true;
  EXPECT_EQ(MakePlan(AllGather(kMiB), uneven, hpz_only, {}).reason, zppReasonTopology);
  const Plan unquantized = MakePlan(AllGather(kMiB), MakeShape(2, 4), hpz_only, {});
  EXPECT_EQ(unquantized.kind, PlanKind::kHierarchicalAllGather);
  EXPECT_EQ(unquantized.bits_inter, 0);
}

TEST(PlannerTest, ReduceScatterChoices) {
  const Settings all = ZeroPlusPlus();
  EXPECT_EQ(MakePlan(ReduceScatter(kMiB), MakeShape(2, 4), all, {}).kind,
            PlanKind::kQgzHierarchicalReduceScatter);
  EXPECT_EQ(MakePlan(ReduceScatter(kMiB), MakeShape(4, 2, 2), all, {}).kind,
            PlanKind::kQgzThreeLevelReduceScatter);
  for (Reduction r : {Reduction::kSum, Reduction::kAvg, Reduction::kPreMulSum}) {
    EXPECT_NE(MakePlan(ReduceScatter(kMiB, ncclFloat32, r), MakeShape(2, 4), all, {}).kind,
              PlanKind::kPassThrough);
  }
  // Flat int4 bf16 all-to-all with 8 ranks per node: 56 remote ranks x 0.26 B/element is about
  // twice plain's 7 x 2 B/element, so it must not be picked.
  Shape flat8 = MakeShape(8, 8);
  flat8.hierarchical_allowed = false;
  const Plan refused = MakePlan(ReduceScatter(kMiB), flat8, all, {});
  EXPECT_EQ(refused.reason, zppReasonTopology);
  // With 2 ranks per node the flat all-to-all is cheaper than the ring, so it runs.
  Shape flat2 = MakeShape(4, 2);
  flat2.hierarchical_allowed = false;
  EXPECT_EQ(MakePlan(ReduceScatter(kMiB), flat2, all, {}).kind, PlanKind::kQgzFlatReduceScatter);
}

// Issue 29, item 2: on one node nothing crosses a node, so the lossy techniques would only add
// error: their calls pass through unless a test forces them (ZPP_LOSSY_ONE_NODE).
TEST(PlannerTest, OneNodeRunsNoLossyTechniqueUnlessForced) {
  Settings all = ZeroPlusPlus();
  for (const Call& call : {AllGather(kMiB), ReduceScatter(kMiB)}) {
    EXPECT_EQ(MakePlan(call, MakeShape(1, 8), all, {}).reason, zppReasonOneNode);
    EXPECT_EQ(MakePlan(call, MakeShape(1, 8), all, {}).kind, PlanKind::kPassThrough);
  }
  all.lossy_on_one_node = true;
  EXPECT_EQ(MakePlan(AllGather(kMiB), MakeShape(1, 8), all, {}).kind, PlanKind::kQwzFlatAllGather);
  EXPECT_EQ(MakePlan(ReduceScatter(kMiB), MakeShape(1, 2), all, {}).kind,
            PlanKind::kQgzFlatReduceScatter);
}

TEST(PlannerTest, HierarchicalQgzCrossesNodesOnceAtInterBits) {
  const Settings all = ZeroPlusPlus();
  const uint64_t count = 3 * kMiB + 17;
  const Plan plan = MakePlan(ReduceScatter(count, ncclFloat32), MakeShape(4, 8), all, {});
  ASSERT_EQ(plan.kind, PlanKind::kQgzHierarchicalReduceScatter);
  EXPECT_EQ(plan.off_node_bytes, 3 * zppPieceBytes(count, ncclFloat32, 4, 256));
  EXPECT_EQ(plan.plain_off_node_bytes, 3 * count * 4);
}

// Over the topology matrix, every dtype, bit width, block and a range of sizes: no plan moves
// more bytes off its node than plain NCCL's ring would for that call.
TEST(PlannerTest, NeverMovesMoreOffNodeBytesThanPlain) {
  struct Topo {
    int nodes, local, racks;
    bool hierarchical;
  };
  const std::vector<Topo> topologies = {{1, 8, 1, false}, {2, 4, 1, true},  {4, 2, 1, true},
                                        {8, 8, 1, true},  {16, 8, 1, true}, {4, 2, 2, true},
                                        {2, 8, 1, false}, {8, 8, 1, false}, {16, 1, 1, false}};
  int plans_checked = 0;
  for (const Topo& t : topologies) {
    Shape shape = MakeShape(t.nodes, t.local, t.racks);
    shape.hierarchical_allowed = t.hierarchical;
    shape.rack_level_allowed = t.hierarchical && t.racks > 1;
    for (ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
      for (int bits : {4, 8}) {
        for (int block : {32, 256, 4096}) {
          for (uint64_t count : {uint64_t{1}, uint64_t{31}, uint64_t{255}, uint64_t{257},
                                 uint64_t{4097}, uint64_t{3} << 20}) {
            Settings s = ZeroPlusPlus();
            s.qwz_bits = s.qgz_bits_inter = s.qgz_bits_intra = bits;
            s.block = block;
            s.min_bytes = 0;
            for (bool hit : {false, true}) {
              for (const Call& call : {AllGather(count, dtype), ReduceScatter(count, dtype)}) {
                const Plan plan = MakePlan(call, shape, s, HpzState{hit});
                EXPECT_LE(plan.off_node_bytes, plan.plain_off_node_bytes)
                    << PlanKindName(plan.kind) << " nodes " << t.nodes << " local " << t.local
                    << " count " << count << " bits " << bits << " block " << block;
                ++plans_checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(plans_checked, 9 * 3 * 2 * 3 * 6 * 2 * 2);
}

}  // namespace
}  // namespace zpp::plan
