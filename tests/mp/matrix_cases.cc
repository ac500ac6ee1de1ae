#include "matrix_cases.h"

namespace zpp::test {
namespace {

struct Mode {
  std::string name;
  plan::Settings settings;
};

std::vector<Mode> Modes() {
  auto make = [](bool qwz, int qwz_bits, bool hpz, bool qgz, int intra, int inter) {
    plan::Settings s;
    s.qwz = qwz;
    s.qwz_bits = qwz_bits;
    s.hpz = hpz;
    s.qgz = qgz;
    s.qgz_bits_intra = intra;
    s.qgz_bits_inter = inter;
    s.min_bytes = 0;
    return s;
  };
  return {
      {"plain", make(false, 8, false, false, 8, 4)},  {"qwz8", make(true, 8, false, false, 8, 4)},
      {"qwz4", make(true, 4, false, false, 8, 4)},    {"hpz", make(false, 8, true, false, 8, 4)},
      {"qwz8_hpz", make(true, 8, true, false, 8, 4)}, {"qgz8_4", make(false, 8, false, true, 8, 4)},
      {"qgz8_8", make(false, 8, false, true, 8, 8)},  {"qgz4_4", make(false, 8, false, true, 4, 4)},
  };
}

// 256 KiB of bf16 across the ranks: several messages over UCX's rendezvous protocol.
constexpr size_t kLargeBytes = size_t{256} << 10;

}  // namespace

std::vector<MatrixTopology> MatrixTopologies() {
  sim::ClusterLayout interleaved;
  interleaved.node_of_rank = {0, 1, 0, 1, 0, 1, 0, 1};
  interleaved.rack_of_node = {0, 0};
  return {
      {"2nodes_x4", sim::ClusterLayout::Uniform(2, 4)},
      {"4nodes_x2", sim::ClusterLayout::Uniform(4, 2)},
      {"2racks_x2nodes_x2", sim::ClusterLayout::Uniform(4, 2, 2)},
      {"interleaved_2x4", interleaved},
  };
}

std::vector<MatrixCase> MatrixCases() {
  std::vector<MatrixCase> cases;
  const int topologies = static_cast<int>(MatrixTopologies().size());
  for (int topology = 0; topology < topologies; ++topology) {
    for (const Mode& mode : Modes()) {
      for (ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
        for (size_t count : {size_t{1}, size_t{37}, size_t{255}, size_t{257}, size_t{1000}}) {
          for (plan::CollectiveOp op :
               {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter}) {
            CollectiveSpec spec;
            spec.op = op;
            spec.count = count;
            spec.dtype = dtype;
            spec.seed = static_cast<uint32_t>(count * 3 + dtype);
            spec.in_place = count == 257;
            spec.reduction = count == 37 ? plan::Reduction::kAvg : plan::Reduction::kSum;
            if (count == 255) {
              spec.reduction = plan::Reduction::kPreMulSum;
              spec.premul = 0.25f;
              spec.premul_on_device = true;
            }
            if (count == 1000) {
              spec.reduction = plan::Reduction::kPreMulSum;
              spec.premul = 0.125f;
            }
            cases.push_back({topology, mode.name, mode.settings, spec});
          }
        }
      }
      if (topology != 0) continue;
      for (plan::CollectiveOp op :
           {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter}) {
        CollectiveSpec spec;
        spec.op = op;
        spec.dtype = ncclBfloat16;
        spec.count = kLargeBytes / (2 * kMatrixRanks) + 3;  // not a multiple of the block
        cases.push_back({topology, mode.name, mode.settings, spec});
      }
    }
  }
  return cases;
}

}  // namespace zpp::test
