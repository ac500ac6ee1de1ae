// qgZ's error feedback (ZPP_QGZ_EF): what the inter-node requantization of a reduce-scatter
// lost is kept, block-quantized to int8 (LoCo's choice), and added to the same call's sum in the
// next step, so that coarse inter-node gradients stop biasing training.
//
// "The same call" is the same place among the step's reduce-scatters that run a hierarchical
// qgZ plan, with the same count and dtype: never the buffer's address (frameworks reduce from
// fresh buffers), and the same on every rank (every rank makes the same calls in the same
// order). A call whose place holds another (count, dtype) than last step means the pattern
// changed: it and every later call of the step start afresh, so no residual reaches a call it
// was not made for. Residuals live in pool buffers, fenced like hpZ's partitions, within
// ZPP_EF_MAX_MB; calls past the bound, or that the pool refuses, run without (counted).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/nccl_types.h"
#include "common/result.h"
#include "fence/buffer_pool.h"

namespace zpp::engine {

class ErrorFeedback {
 public:
  ErrorFeedback(BufferPool& pool, uint64_t max_bytes, std::function<uint64_t()> epoch);

  // This call's residual: `lease` null when it runs without (past the bound, or refused);
  // `valid` when it holds what the same call's last step lost (else it is read as zero).
  struct Slot {
    BufferLease* lease = nullptr;
    bool valid = false;
    size_t index = 0;
  };
  Result Take(uint64_t count, ncclDataType_t dtype, size_t bytes, Slot* slot);
  // The plan enqueued the write of `slot`'s residual: next step's call at its place may use it.
  void Written(const Slot& slot);

  uint64_t kept_bytes() const { return kept_bytes_; }

 private:
  struct Entry {
    uint64_t count = 0;
    ncclDataType_t dtype = ncclFloat32;
    size_t bytes = 0;
    BufferLease lease;
    bool written = false;  // by the latest call at this place
  };
  void StartCall();

  BufferPool& pool_;
  const uint64_t max_bytes_;
  std::function<uint64_t()> epoch_;
  std::vector<Entry> entries_;  // by place in the step
  uint64_t kept_bytes_ = 0;
  uint64_t current_epoch_ = 0;
  bool started_ = false;
  size_t next_ = 0;  // this step's next place
};

}  // namespace zpp::engine
