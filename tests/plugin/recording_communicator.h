// A ZppCommunicator double for the plugin's decision tests: the hooks see a communicator that
// zpp set up on a 2-node x 2-rank hierarchy, and every call that reaches it is recorded.
#pragma once

#include <functional>
#include <vector>

#include "cuda_nccl/zpp_communicator.h"

namespace zpp::test {

struct Recorded {
  std::vector<engine::AllGatherArgs> all_gathers;
  std::vector<engine::ReduceScatterArgs> reduce_scatters;
  std::vector<engine::AllReduceArgs> all_reduces;
  int live = 0;                    // communicators alive
  int aborts = 0;                  // Abort() calls
  bool device_uses_ended = false;  // what DeviceUsesEnded() answers (the device is stuck)
  bool fail_setup = false;
  ncclResult_t async_error = ncclSuccess;  // what AsyncError() answers
  bool capturing = false;                  // what StreamCapturing answers
  std::vector<ncclComm_t> setup_comms;     // the communicator each set-up was given
  std::vector<bool> nccl_busy_at_call;     // whether the stand-in NCCL had work in progress
  std::function<void()> during_call;       // runs inside every recorded call (tests block it)
  uint64_t hpz_failures = 0;               // what ReadHpzChecks answers
  uint64_t hpz_choices = 0;
  // ZPP_TUNE=auto: whether the communicator is tuned, and the count of elements below which its
  // table sends a call zpp would run to NCCL (reason 'tuned').
  bool tuned = false;
  size_t tuned_to_nccl_below = 0;
  int at_calls = 0;  // AtCall() calls
  struct Timed {
    plan::Plan ran;             // what the timed call reported
    int nccl_calls_inside = 0;  // the stand-in NCCL's calls made inside the timing
    int zpp_calls_inside = 0;   // zpp's calls made inside it
  };
  std::vector<Timed> timed;
};

Recorded& Recording();

}  // namespace zpp::test
