// A collective's cost in launches must not grow with the cluster (issue 18): every plan is
// replayed on simulated clusters of growing size, and the kernels and collectives it enqueues
// per call must be the same at every size and within the plan's bound. Its outputs must stay
// bitwise what they were before the codec work was batched (the hashes below were taken from
// the per-destination code at commit 8d0942c). And qgZ runs past the 128 pieces the CUDA
// reduction once took at most, flat and hierarchical.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codec/element_io.h"
#include "engine/engine.h"
#include "sim/sim_backend.h"
#include "sim/sim_world.h"

namespace zpp::test {
namespace {

using plan::CollectiveOp;
using plan::PlanKind;
using sim::ClusterLayout;

struct Case {
  std::string name;
  plan::Settings settings;
  CollectiveOp op = CollectiveOp::kAllGather;
  plan::Reduction reduction = plan::Reduction::kSum;
  bool premul_on_device = false;
  bool flat = false;  // runs on clusters of one rank per node only (qgZ's flat plan)
  int steps = 1;      // step epochs, each gathering the same shard twice (hpZ fills, then hits)
};

plan::Settings Settings(bool qwz, int qwz_bits, bool hpz, bool qgz, int intra, int inter) {
  plan::Settings s;
  s.qwz = qwz;
  s.qwz_bits = qwz_bits;
  s.hpz = hpz;
  s.qgz = qgz;
  s.qgz_bits_intra = intra;
  s.qgz_bits_inter = inter;
  s.block = 32;
  s.min_bytes = 0;
  return s;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"qwz8", Settings(true, 8, false, false, 8, 4)});
  cases.push_back({"qwz4", Settings(true, 4, false, false, 8, 4)});
  cases.push_back({"hpz", Settings(false, 8, true, false, 8, 4), CollectiveOp::kAllGather,
                   plan::Reduction::kSum, false, false, 4});
  cases.push_back({"qwz8_hpz", Settings(true, 8, true, false, 8, 4), CollectiveOp::kAllGather,
                   plan::Reduction::kSum, false, false, 4});
  cases.push_back({"qgz_flat", Settings(false, 8, false, true, 8, 8), CollectiveOp::kReduceScatter,
                   plan::Reduction::kSum, false, true});
  cases.push_back({"qgz8_4_avg", Settings(false, 8, false, true, 8, 4),
                   CollectiveOp::kReduceScatter, plan::Reduction::kAvg});
  cases.push_back({"qgz4_4_premul_device", Settings(false, 8, false, true, 4, 4),
                   CollectiveOp::kReduceScatter, plan::Reduction::kPreMulSum, true});
  return cases;
}

// The calls one rank made, and what every rank got.
struct CallRecord {
  PlanKind kind = PlanKind::kPassThrough;
  LaunchCounts launches;
};
struct Replay {
  std::vector<CallRecord> calls;  // rank 0's
  bool ranks_agree = true;        // every rank: the same plans and launch counts
  uint64_t output_hash = 0;       // every call's output on every rank, in order
  int failures = 0;
};

uint64_t Fnv(uint64_t h, const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}

constexpr size_t kCount = 100;  // per rank: three full blocks of 32 and a short one
constexpr ncclDataType_t kDtype = ncclBfloat16;

Replay ReplayCase(const ClusterLayout& layout, const Case& c) {
  sim::SimWorld world(layout);
  const int n = world.world_size();
  const plan::Shape shape = sim::ShapeOf(layout);
  const bool gather = c.op == CollectiveOp::kAllGather;
  const size_t in_count = gather ? kCount : kCount * n;
  const size_t out_count = gather ? kCount * n : kCount;
  const size_t element = NcclTypeBytes(kDtype);
  const int calls = gather ? 2 * c.steps : 1;

  std::vector<std::vector<CallRecord>> records(n);
  std::vector<std::vector<std::vector<uint8_t>>> outputs(n);
  std::atomic<int> failures{0};
  StatsCounters stats;
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    std::mt19937_64 rng(7919u * (rank + 1));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(in_count);
    for (float& v : values) v = normal(rng);
    std::vector<uint8_t> send(in_count * element);
    codec::StoreElements(send.data(), kDtype, 0, in_count, values.data());
    const float premul = 0.25f;
    std::vector<uint8_t> device_scalar(4);  // the sim's device memory is host memory
    codec::StoreElements(device_scalar.data(), kDtype, 0, 1, &premul);

    uint64_t epoch = 0;
    engine::EngineOptions options;
    options.settings = c.settings;
    options.epoch = [&epoch] { return epoch; };
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> stream;
    if (backend.CreateStream(&stream) != ncclSuccess) {
      ++failures;
      return;
    }
    for (int call = 0; call < calls; ++call) {
      epoch = static_cast<uint64_t>(call / 2);
      std::vector<uint8_t> recv(out_count * element, 0xEE);
      plan::Plan chosen;
      const LaunchCounts before = backend.launches();
      Result result;
      if (gather) {
        // Each epoch's two gathers: a forward fill and the backward gather that reuses it.
        const TrainingPass pass = call % 2 == 0 ? TrainingPass::kForward : TrainingPass::kBackward;
        result =
            engine.AllGather({send.data(), recv.data(), kCount, kDtype, pass}, *stream, &chosen);
      } else {
        result = engine.ReduceScatter({send.data(), recv.data(), kCount, kDtype, c.reduction,
                                       premul, c.premul_on_device ? device_scalar.data() : nullptr},
                                      *stream, &chosen);
      }
      const LaunchCounts after = backend.launches();
      if (result != ncclSuccess) ++failures;
      backend.Synchronize(*stream);
      records[rank].push_back(
          {chosen.kind, {after.kernels - before.kernels, after.collectives - before.collectives}});
      outputs[rank].push_back(std::move(recv));
    }
  });
  Replay replay;
  replay.failures = failures.load();
  replay.calls = records[0];
  replay.output_hash = 0xCBF29CE484222325ull;
  for (int call = 0; call < calls; ++call) {
    for (int r = 0; r < n; ++r) {
      const CallRecord& mine = records[r][call];
      const CallRecord& first = records[0][call];
      replay.ranks_agree &= mine.kind == first.kind &&
                            mine.launches.kernels == first.launches.kernels &&
                            mine.launches.collectives == first.launches.collectives;
      replay.output_hash =
          Fnv(replay.output_hash, outputs[r][call].data(), outputs[r][call].size());
    }
  }
  return replay;
}

// Kernels (codec, fingerprint, copy) each plan may launch per call, whatever the cluster:
// qwZ quantize + dequantize; hpZ hit fingerprint + the choice of its partition (which verifies
// it) + dequantize (or one batched copy);
// qgZ quantize, one reduce per stage, and the device pre-multiplier.
int KernelBound(PlanKind kind) {
  switch (kind) {
    case PlanKind::kQwzFlatAllGather:
      return 2;
    case PlanKind::kHierarchicalAllGather:
      return 5;  // fingerprint, quantize, dequantize; the epoch's pattern and its record's copy
    case PlanKind::kHpzHitAllGather:
      return 3;
    case PlanKind::kQgzFlatReduceScatter:
    case PlanKind::kQgzHierarchicalReduceScatter:
      return 4;
    case PlanKind::kQgzThreeLevelReduceScatter:
      return 6;
    default:
      return 0;
  }
}

struct Family {
  std::string name;
  std::vector<std::pair<std::string, ClusterLayout>> sizes;
  bool flat = false;
};

std::vector<Family> Families() {
  return {
      {"two_level",
       {{"2x4", ClusterLayout::Uniform(2, 4)},
        {"8x8", ClusterLayout::Uniform(8, 8)},
        {"16x16", ClusterLayout::Uniform(16, 16)}}},
      {"three_level",
       {{"2r_x2x2", ClusterLayout::Uniform(4, 2, 2)},
        {"2r_x4x4", ClusterLayout::Uniform(8, 4, 2)},
        {"4r_x4x8", ClusterLayout::Uniform(16, 8, 4)}}},
      {"flat",
       {{"8x1", ClusterLayout::Uniform(8, 1)},
        {"64x1", ClusterLayout::Uniform(64, 1)},
        {"256x1", ClusterLayout::Uniform(256, 1)}},
       true},
  };
}

// Outputs of the per-destination code (commit 8d0942c), per cluster and case.
const std::map<std::string, uint64_t>& Golden() {
  static const std::map<std::string, uint64_t> golden = {
      {"two_level/2x4/qwz8", 0xdadf4ef5934ee125ull},
      {"two_level/8x8/qwz8", 0x467c0611e5a7f925ull},
      {"two_level/16x16/qwz8", 0x343f107708efa325ull},
      {"two_level/2x4/qwz4", 0x6cacce6790ca5fa5ull},
      {"two_level/8x8/qwz4", 0x49bff9b2f42efb25ull},
      {"two_level/16x16/qwz4", 0x51be0ecc4b1a6725ull},
      {"two_level/2x4/hpz", 0x98f3767ac3452525ull},
      {"two_level/8x8/hpz", 0x2a1a95d03c25af25ull},
      {"two_level/16x16/hpz", 0xe47d8dad9463e325ull},
      {"two_level/2x4/qwz8_hpz", 0x8e06405286151b25ull},
      {"two_level/8x8/qwz8_hpz", 0xd88d376b9a397b25ull},
      {"two_level/16x16/qwz8_hpz", 0xd832156e97582325ull},
      {"two_level/2x4/qgz8_4_avg", 0x1d3c47ffc4cf4c41ull},
      {"two_level/8x8/qgz8_4_avg", 0x56a7f54dc7b61876ull},
      {"two_level/16x16/qgz8_4_avg", 0x31c30704abd82fbbull},
      {"two_level/2x4/qgz4_4_premul_device", 0x3e14b6996b12c739ull},
      {"two_level/8x8/qgz4_4_premul_device", 0xe499480241ce548cull},
      {"two_level/16x16/qgz4_4_premul_device", 0xebff970473cc1089ull},
      {"three_level/2r_x2x2/qwz8", 0xdadf4ef5934ee125ull},
      {"three_level/2r_x4x4/qwz8", 0x532e957d08d94225ull},
      {"three_level/4r_x4x8/qwz8", 0xdb22a775a2f3d925ull},
      {"three_level/2r_x2x2/qwz4", 0x6cacce6790ca5fa5ull},
      {"three_level/2r_x4x4/qwz4", 0x637ee1e1cbbfdb25ull},
      {"three_level/4r_x4x8/qwz4", 0x6cf0db38e143fb25ull},
      {"three_level/2r_x2x2/hpz", 0x98f3767ac3452525ull},
      {"three_level/2r_x4x4/hpz", 0x79dc1083a8007f25ull},
      {"three_level/4r_x4x8/hpz", 0x303ed801acfa5325ull},
      {"three_level/2r_x2x2/qwz8_hpz", 0x8e06405286151b25ull},
      {"three_level/2r_x4x4/qwz8_hpz", 0x1966d45540fe9f25ull},
      {"three_level/4r_x4x8/qwz8_hpz", 0x1e8a0ac33f68fb25ull},
      {"three_level/2r_x2x2/qgz8_4_avg", 0x38a080b680ad9908ull},
      {"three_level/2r_x4x4/qgz8_4_avg", 0xb473d793d3029a73ull},
      {"three_level/4r_x4x8/qgz8_4_avg", 0x74360e2024a87ae6ull},
      {"three_level/2r_x2x2/qgz4_4_premul_device", 0xee801cfd30fdc1f7ull},
      {"three_level/2r_x4x4/qgz4_4_premul_device", 0x9fde21f67aefae0full},
      {"three_level/4r_x4x8/qgz4_4_premul_device", 0x0fe5b4dd6690b587ull},
      {"flat/8x1/qwz8", 0xdadf4ef5934ee125ull},
      {"flat/64x1/qwz8", 0x467c0611e5a7f925ull},
      {"flat/256x1/qwz8", 0x343f107708efa325ull},
      {"flat/8x1/qwz4", 0x6cacce6790ca5fa5ull},
      {"flat/64x1/qwz4", 0x49bff9b2f42efb25ull},
      {"flat/256x1/qwz4", 0x51be0ecc4b1a6725ull},
      {"flat/8x1/qgz_flat", 0xc561248ca5224840ull},
      {"flat/64x1/qgz_flat", 0xfa4ecc7f158961afull},
      {"flat/256x1/qgz_flat", 0x23dd6f608e3fe3abull},
  };
  return golden;
}

std::string Describe(const CallRecord& call) {
  return std::string(plan::PlanKindName(call.kind)) + " " + std::to_string(call.launches.kernels) +
         " kernels " + std::to_string(call.launches.collectives) + " collectives";
}

TEST(LaunchScaleTest, LaunchesPerCallDoNotGrowAndOutputsStayBitwise) {
  for (const Family& family : Families()) {
    for (const Case& c : Cases()) {
      if (c.flat != family.flat && c.settings.qgz) continue;
      if (family.flat && c.settings.hpz) continue;  // hpZ needs a hierarchy
      std::vector<CallRecord> smallest;
      for (const auto& [size, layout] : family.sizes) {
        const std::string where = family.name + "/" + size + "/" + c.name;
        const Replay replay = ReplayCase(layout, c);
        ASSERT_EQ(replay.failures, 0) << where;
        EXPECT_TRUE(replay.ranks_agree) << where;
        for (size_t call = 0; call < replay.calls.size(); ++call) {
          const CallRecord& record = replay.calls[call];
          std::printf("LAUNCHES %-40s call %zu: %s\n", where.c_str(), call,
                      Describe(record).c_str());
          EXPECT_NE(record.kind, PlanKind::kPassThrough) << where;
          EXPECT_LE(record.launches.kernels, static_cast<uint64_t>(KernelBound(record.kind)))
              << where << " call " << call << ": " << Describe(record);
          if (smallest.size() > call) {
            EXPECT_EQ(Describe(record), Describe(smallest[call]))
                << where << " call " << call << " against the smallest cluster";
          }
        }
        if (smallest.empty()) smallest = replay.calls;
        const auto golden = Golden().find(where);
        if (golden == Golden().end()) {
          ADD_FAILURE() << "no golden output hash for " << where;
          std::printf("GOLDEN {\"%s\", 0x%016llxull},\n", where.c_str(),
                      static_cast<unsigned long long>(replay.output_hash));
        } else {
          EXPECT_EQ(replay.output_hash, golden->second) << where << ": outputs changed";
        }
      }
    }
  }
}

// hpZ hits must be among the calls replayed, or the hit's bound above checks nothing.
TEST(LaunchScaleTest, HpzReplayReachesHits) {
  for (const Case& c : Cases()) {
    if (c.steps == 1) continue;
    const Replay replay = ReplayCase(ClusterLayout::Uniform(2, 4), c);
    int hits = 0;
    for (const CallRecord& call : replay.calls) hits += call.kind == PlanKind::kHpzHitAllGather;
    EXPECT_GE(hits, 2) << c.name;
  }
}

// The reduce-scatter of n ranks against the fp64 sum of the inputs: relative L2 error.
double QgzRelativeError(const ClusterLayout& layout, PlanKind expected) {
  sim::SimWorld world(layout);
  const int n = world.world_size();
  const plan::Shape shape = sim::ShapeOf(layout);
  const plan::Settings settings = Settings(false, 8, false, true, 8, 8);
  constexpr size_t kSmall = 40;
  std::vector<std::vector<float>> inputs(n), outputs(n);
  std::vector<plan::Plan> plans(n);
  std::atomic<int> failures{0};
  StatsCounters stats;
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    std::mt19937_64 rng(rank + 11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    inputs[rank].resize(kSmall * n);
    for (float& v : inputs[rank]) v = uniform(rng);
    outputs[rank].assign(kSmall, NAN);
    engine::EngineOptions options;
    options.settings = settings;
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> stream;
    if (backend.CreateStream(&stream) != ncclSuccess ||
        engine.ReduceScatter({inputs[rank].data(), outputs[rank].data(), kSmall, ncclFloat32},
                             *stream, &plans[rank]) != ncclSuccess) {
      ++failures;
    }
    backend.Synchronize(*stream);
  });
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(plans[0].kind, expected);
  double error = 0, norm = 0;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < kSmall; ++i) {
      double sum = 0;
      for (int from = 0; from < n; ++from) sum += inputs[from][r * kSmall + i];
      error += (outputs[r][i] - sum) * (outputs[r][i] - sum);
      norm += sum * sum;
    }
  }
  return std::sqrt(error / norm);
}

// 130 ranks, one per node: the flat plan sums 130 pieces per rank.
TEST(LaunchScaleTest, QgzFlatOnMoreThan128Ranks) {
  EXPECT_LT(QgzRelativeError(ClusterLayout::Uniform(130, 1), PlanKind::kQgzFlatReduceScatter),
            0.02);
}

// 130 nodes of 2: the inter-node stage sums 130 node sums per rank.
TEST(LaunchScaleTest, QgzHierarchicalOnMoreThan128Nodes) {
  EXPECT_LT(
      QgzRelativeError(ClusterLayout::Uniform(130, 2), PlanKind::kQgzHierarchicalReduceScatter),
      0.02);
}

}  // namespace
}  // namespace zpp::test
