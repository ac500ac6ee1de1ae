// State a call keeps for the same call in the next step: qgZ's error-feedback residuals
// (ZPP_QGZ_EF: what the inter-node requantization of a reduce-scatter lost, int8, added to the
// same call's sum next step) and qwZ's weight-delta references (ZPP_QWZ_DELTA: the partition the
// receivers reconstructed, which the next step's delta is taken against).
//
// "The same call" is the same place among the step's calls of that kind (reduce-scatters that
// run a hierarchical qgZ plan; all-gathers that run a delta plan's inter-node stage), with the
// same count and dtype: never the buffer's address (frameworks use fresh buffers), and the same
// on every rank (every rank makes the same calls in the same order). A call whose place holds
// another (count, dtype, bytes) than last step means the pattern changed: it and every later
// call of the step start afresh, so no state reaches a call it was not made for. The state lives
// in pool buffers, fenced like hpZ's partitions, within a byte bound; calls past the bound, or
// that the pool refuses, run without (the same on every rank: same sizes, same order).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "fence/buffer_pool.h"
#include "kernels/math/nccl_types.h"
#include "log/check.h"

namespace zpp::engine {

class StepSlots {
 public:
  StepSlots(BufferPool& pool, uint64_t max_bytes, std::function<uint64_t()> epoch);

  // This call's state: `lease` null when it runs without (past the bound, or refused); `valid`
  // when the same call wrote it last step (else it holds nothing to use).
  struct Slot {
    BufferLease* lease = nullptr;
    bool valid = false;
    size_t index = 0;
  };
  Result Take(uint64_t count, ncclDataType_t dtype, size_t bytes, Slot* slot);
  // The plan enqueued the write of `slot`'s state: next step's call at its place may use it.
  void Written(const Slot& slot);

  uint64_t kept_bytes() const { return kept_bytes_; }
  // The state kept at a place (null when none), for tests that damage it.
  BufferLease* LeaseAtForTesting(size_t place) {
    return place < entries_.size() && entries_[place].lease ? &entries_[place].lease : nullptr;
  }

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
