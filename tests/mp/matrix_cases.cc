#include "matrix_cases.h"

namespace zpp::test {
namespace {

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
    for (const MatrixMode& mode : MatrixModes()) {
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
