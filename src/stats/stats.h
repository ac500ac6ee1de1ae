// Process-wide counters behind zppGetStats. Lock-free; any thread may add.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "zpp/zpp.h"

namespace zpp {

class StatsCounters {
 public:
  // A communicator's counters also add to the process's (`parent`), so that both views agree.
  explicit StatsCounters(StatsCounters* parent = nullptr) : parent_(parent) {}
  StatsCounters(const StatsCounters&) = delete;
  StatsCounters& operator=(const StatsCounters&) = delete;

  void AddCall(zppPath_t path, uint64_t input_bytes);
  void AddPassThrough(zppPassThroughReason_t reason, uint64_t input_bytes);
  void AddSent(zppLink_t link, uint64_t bytes);
  // zpp's own agreements and calibration (zppStats_t::control_sent_bytes).
  void AddControlSent(zppLink_t link, uint64_t bytes);
  void AddHpzHit();
  void AddHpzMiss();
  void AddHpzVerifyFailures(uint64_t n);
  // Kernels and collectives a plan of `path` enqueued.
  void AddLaunches(zppPath_t path, uint64_t kernels, uint64_t collectives);
  // ZPP_TUNE's check of its model: a tuned call's predicted and measured microseconds.
  void AddPredictedUs(zppPath_t path, uint64_t us);
  void AddMeasuredUs(zppPath_t path, uint64_t us);
  // hpZ's kept secondary partitions now hold `bytes`; the peak is kept.
  void NoteHpzKeptBytes(uint64_t bytes);
  // A collective call waited on the host for the device (hpZ's epoch record, once per epoch).
  void AddHostWait();
  // What plain NCCL would have sent off the node for a call (plan::Plan::plain_off_node_bytes).
  void AddPlainOffNode(uint64_t bytes);
  // A qgZ call under ZPP_QGZ_EF: with its residual kept, or without.
  void AddFeedback(bool kept);
  // A weight all-gather under ZPP_QWZ_DELTA sent a delta, or in full.
  void AddDeltaSend(bool delta);

  // Fills every field but step_epoch.
  void Snapshot(zppStats_t* out) const;

 private:
  std::array<std::atomic<uint64_t>, zppNumPaths> calls_{};
  std::array<std::atomic<uint64_t>, zppNumPaths> input_bytes_{};
  std::array<std::atomic<uint64_t>, zppNumReasons> passthrough_{};
  std::array<std::atomic<uint64_t>, zppNumLinks> sent_bytes_{};
  std::array<std::atomic<uint64_t>, zppNumLinks> control_sent_bytes_{};
  std::atomic<uint64_t> hpz_hits_{0};
  std::atomic<uint64_t> hpz_misses_{0};
  std::atomic<uint64_t> hpz_verify_failures_{0};
  std::array<std::atomic<uint64_t>, zppNumPaths> kernel_launches_{};
  std::array<std::atomic<uint64_t>, zppNumPaths> collective_launches_{};
  std::atomic<uint64_t> hpz_kept_bytes_peak_{0};
  std::array<std::atomic<uint64_t>, zppNumPaths> predicted_us_{};
  std::array<std::atomic<uint64_t>, zppNumPaths> measured_us_{};
  std::atomic<uint64_t> host_waits_{0};
  std::atomic<uint64_t> plain_off_node_bytes_{0};
  std::atomic<uint64_t> qgz_ef_calls_{0};
  std::atomic<uint64_t> qgz_ef_without_{0};
  std::atomic<uint64_t> qwz_delta_calls_{0};
  std::atomic<uint64_t> qwz_delta_full_{0};
  StatsCounters* const parent_;

  // Runs `add` on these counters and on each parent's: every Add* counts up the whole chain.
  template <typename Add>
  void ForChain(const Add& add);
};

StatsCounters& ProcessStats();

// "disabled", "dtype", ... or nullptr for a value out of range.
const char* PassThroughReasonName(int reason);

}  // namespace zpp
