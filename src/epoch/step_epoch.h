// The process's step epoch: advanced once per optimizer step (zppStepEpochAdvance). hpZ may
// reuse a secondary partition only within the epoch that filled it (docs/architecture.md,
// contract 7).
#pragma once

#include <atomic>
#include <cstdint>

namespace zpp {

class StepEpoch {
 public:
  // Returns the new epoch.
  uint64_t Advance() { return epoch_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  uint64_t Current() const { return epoch_.load(std::memory_order_acquire); }
  // Steps the hpZ step guard skipped on every rank (zppHpzStepSkipped).
  void CountSkippedStep() { skipped_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t SkippedSteps() const { return skipped_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> skipped_{0};
};

StepEpoch& ProcessStepEpoch();

}  // namespace zpp
