// A ZppCommunicator double for the plugin's decision tests: the hooks see a communicator that
// zpp set up on a 2-node x 2-rank hierarchy, and every call that reaches it is recorded.
#pragma once

#include <vector>

#include "cuda_nccl/zpp_communicator.h"

namespace zpp::test {

struct Recorded {
  std::vector<engine::AllGatherArgs> all_gathers;
  std::vector<engine::ReduceScatterArgs> reduce_scatters;
  int live = 0;    // communicators alive
  int aborts = 0;  // Abort() calls
  bool fail_setup = false;
  bool capturing = false;  // what StreamCapturing answers
};

Recorded& Recording();

}  // namespace zpp::test
