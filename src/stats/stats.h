// Process-wide counters behind zppGetStats. Lock-free; any thread may add.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "zpp/zpp.h"

namespace zpp {

class StatsCounters {
 public:
  void AddCall(zppPath_t path, uint64_t input_bytes);
  void AddPassThrough(zppPassThroughReason_t reason, uint64_t input_bytes);
  void AddSent(zppLink_t link, uint64_t bytes);
  void AddHpzHit() { hpz_hits_.fetch_add(1, std::memory_order_relaxed); }
  void AddHpzMiss() { hpz_misses_.fetch_add(1, std::memory_order_relaxed); }
  void AddHpzVerifyFailures(uint64_t n) {
    hpz_verify_failures_.fetch_add(n, std::memory_order_relaxed);
  }

  // Fills every field but step_epoch.
  void Snapshot(zppStats_t* out) const;

 private:
  std::array<std::atomic<uint64_t>, zppNumPaths> calls_{};
  std::array<std::atomic<uint64_t>, zppNumPaths> input_bytes_{};
  std::array<std::atomic<uint64_t>, zppNumReasons> passthrough_{};
  std::array<std::atomic<uint64_t>, zppNumLinks> sent_bytes_{};
  std::atomic<uint64_t> hpz_hits_{0};
  std::atomic<uint64_t> hpz_misses_{0};
  std::atomic<uint64_t> hpz_verify_failures_{0};
};

StatsCounters& ProcessStats();

// "disabled", "dtype", ... or nullptr for a value out of range.
const char* PassThroughReasonName(int reason);

}  // namespace zpp
