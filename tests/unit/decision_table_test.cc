// ZPP_TUNE=auto's decision table (tune/decision_table.h): the same figures give the same table,
// a slower link between nodes never sends more bytes across it, only the user's techniques are
// chosen, and NCCL is chosen where the codecs cost more than the bytes they save.
#include "tune/decision_table.h"

#include <gtest/gtest.h>

#include <vector>

#include "costmodel/cost_model.h"
#include "plan/planner.h"
#include "sim/cluster_layout.h"

namespace zpp::tune {
namespace {

plan::Settings AllOn() {
  plan::Settings s;
  s.qwz = s.hpz = s.qgz = s.qar = true;
  s.min_bytes = 0;
  return s;
}

costmodel::ClusterModel Model(double inter_gbps, double codec_gbps = 1000) {
  costmodel::ClusterModel m = costmodel::DefaultModel(2, 4, 2400, inter_gbps);
  m.kernels = {codec_gbps, codec_gbps, codec_gbps, 2 * codec_gbps};
  return m;
}

std::vector<plan::Call> Calls() {
  std::vector<plan::Call> calls;
  for (auto op : {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter,
                  plan::CollectiveOp::kAllReduce}) {
    for (auto dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
      for (uint64_t count = 1; count <= (uint64_t{1} << 30); count *= 4) {
        calls.push_back({op, count, dtype,
                         op == plan::CollectiveOp::kAllGather ? plan::Reduction::kNone
                                                              : plan::Reduction::kSum});
      }
    }
  }
  return calls;
}

const plan::Shape kShape = sim::ShapeOf(sim::ClusterLayout::Uniform(2, 4));

TEST(DecisionTableTest, SameFiguresSameTable) {
  const DecisionTable a = DecisionTable::Build(Model(100), kShape, AllOn());
  const DecisionTable b = DecisionTable::Build(Model(100), kShape, AllOn());
  for (const plan::Call& call : Calls()) EXPECT_EQ(a.Choice(call), b.Choice(call));
  EXPECT_EQ(a.Describe(), b.Describe());
}

// Off-node bytes of the plan a call gets (an hpZ fill's: what crosses nodes).
uint64_t OffNodeBytes(const DecisionTable& table, const plan::Call& call) {
  return plan::MakePlan(call, kShape, table.SettingsFor(call), plan::HpzState{}).off_node_bytes;
}

TEST(DecisionTableTest, ASlowerLinkBetweenNodesNeverSendsMoreAcrossIt) {
  const std::vector<double> faster_to_slower = {100000, 10000, 1000, 100, 10, 1, 0.1};
  int compressed_somewhere = 0, nccl_somewhere = 0;
  for (const plan::Call& call : Calls()) {
    uint64_t previous = UINT64_MAX;
    for (double gbps : faster_to_slower) {
      const DecisionTable table = DecisionTable::Build(Model(gbps), kShape, AllOn());
      const uint64_t bytes = OffNodeBytes(table, call);
      EXPECT_LE(bytes, previous) << gbps << " Gbit/s, count " << call.count << ", op "
                                 << static_cast<int>(call.op) << ", dtype " << call.dtype;
      previous = bytes;
      compressed_somewhere += table.Choice(call) != 0;
      nccl_somewhere += table.Choice(call) == 0;
    }
  }
  EXPECT_GT(compressed_somewhere, 0);
  EXPECT_GT(nccl_somewhere, 0);
}

TEST(DecisionTableTest, ChoosesOnlyTheUsersTechniques) {
  for (uint8_t user = 0; user < 32; ++user) {
    if (user & kWide) continue;
    plan::Settings s;
    s.qwz = user & kQwz;
    s.hpz = user & kHpz;
    s.qgz = user & kQgz;
    s.qar = user & kQar;
    s.min_bytes = 0;
    for (double gbps : {0.1, 10.0, 10000.0}) {
      const DecisionTable table = DecisionTable::Build(Model(gbps), kShape, s);
      for (const plan::Call& call : Calls()) {
        EXPECT_EQ(table.Choice(call) & ~user, 0) << "user " << int{user} << ", " << gbps;
      }
    }
  }
}

TEST(DecisionTableTest, NcclWhereTheCodecCostsMoreThanTheBytesSave) {
  const plan::Call large{plan::CollectiveOp::kReduceScatter, uint64_t{1} << 24, ncclFloat32,
                         plan::Reduction::kSum};
  // A slow link and fast codecs: quantize. A link far faster than the codec: NCCL.
  EXPECT_EQ(DecisionTable::Build(Model(10, 1000), kShape, AllOn()).Choice(large), kQgz);
  EXPECT_EQ(DecisionTable::Build(Model(100000, 1), kShape, AllOn()).Choice(large), 0);
  // The same for DDP's all-reduce (issue 28: the tuner decides it too).
  const plan::Call bucket{plan::CollectiveOp::kAllReduce, uint64_t{1} << 24, ncclFloat32,
                          plan::Reduction::kSum};
  EXPECT_EQ(DecisionTable::Build(Model(10, 1000), kShape, AllOn()).Choice(bucket), kQar);
  EXPECT_EQ(DecisionTable::Build(Model(100000, 1), kShape, AllOn()).Choice(bucket), 0);
  // Its entry is the whole buffer's band, as ZPP_MIN_BYTES measures an all-reduce.
  const DecisionTable table = DecisionTable::Build(Model(10, 1000), kShape, AllOn());
  EXPECT_EQ(table.EntryOf(bucket) % DecisionTable::kBands, DecisionTable::BandOf(64u << 20));
}

}  // namespace
}  // namespace zpp::tune
