// The engine matrix as eight ranks run it, the same list in the test (threads) and in every rank
// process (zpp-launch): each plan x dtype x size x reduction on every 8-rank topology of
// tests/sim/engine_matrix_test.cc, and one larger buffer per plan on the two-node cluster.
#pragma once

#include <string>
#include <vector>

#include "engine_harness.h"
#include "plan/plan.h"
#include "sim/cluster_layout.h"

namespace zpp::test {

struct MatrixTopology {
  std::string name;
  sim::ClusterLayout layout;
};

struct MatrixCase {
  int topology = 0;  // index into MatrixTopologies()
  std::string mode;
  plan::Settings settings;
  CollectiveSpec spec;
};

inline constexpr int kMatrixRanks = 8;

std::vector<MatrixTopology> MatrixTopologies();
// Grouped by topology, in the order the ranks run them.
std::vector<MatrixCase> MatrixCases();

}  // namespace zpp::test
