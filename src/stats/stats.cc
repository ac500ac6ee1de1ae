#include "stats/stats.h"

namespace zpp {

void StatsCounters::AddCall(zppPath_t path, uint64_t input_bytes) {
  calls_[path].fetch_add(1, std::memory_order_relaxed);
  input_bytes_[path].fetch_add(input_bytes, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddCall(path, input_bytes);
}

void StatsCounters::AddPassThrough(zppPassThroughReason_t reason, uint64_t input_bytes) {
  calls_[zppPathPassThrough].fetch_add(1, std::memory_order_relaxed);
  input_bytes_[zppPathPassThrough].fetch_add(input_bytes, std::memory_order_relaxed);
  passthrough_[reason].fetch_add(1, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddPassThrough(reason, input_bytes);
}

void StatsCounters::AddSent(zppLink_t link, uint64_t bytes) {
  sent_bytes_[link].fetch_add(bytes, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddSent(link, bytes);
}

void StatsCounters::AddControlSent(zppLink_t link, uint64_t bytes) {
  control_sent_bytes_[link].fetch_add(bytes, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddControlSent(link, bytes);
}

void StatsCounters::AddHpzHit() {
  hpz_hits_.fetch_add(1, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddHpzHit();
}

void StatsCounters::AddHpzMiss() {
  hpz_misses_.fetch_add(1, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddHpzMiss();
}

void StatsCounters::AddHpzVerifyFailures(uint64_t n) {
  hpz_verify_failures_.fetch_add(n, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddHpzVerifyFailures(n);
}

void StatsCounters::AddLaunches(zppPath_t path, uint64_t kernels, uint64_t collectives) {
  kernel_launches_[path].fetch_add(kernels, std::memory_order_relaxed);
  collective_launches_[path].fetch_add(collectives, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddLaunches(path, kernels, collectives);
}

void StatsCounters::AddPredictedUs(zppPath_t path, uint64_t us) {
  predicted_us_[path].fetch_add(us, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddPredictedUs(path, us);
}

void StatsCounters::AddMeasuredUs(zppPath_t path, uint64_t us) {
  measured_us_[path].fetch_add(us, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddMeasuredUs(path, us);
}

void StatsCounters::NoteHpzKeptBytes(uint64_t bytes) {
  uint64_t peak = hpz_kept_bytes_peak_.load(std::memory_order_relaxed);
  while (bytes > peak &&
         !hpz_kept_bytes_peak_.compare_exchange_weak(peak, bytes, std::memory_order_relaxed)) {
  }
  if (parent_ != nullptr) parent_->NoteHpzKeptBytes(bytes);
}

void StatsCounters::Snapshot(zppStats_t* out) const {
  for (int i = 0; i < zppNumPaths; ++i) {
    out->calls[i] = calls_[i].load(std::memory_order_relaxed);
    out->input_bytes[i] = input_bytes_[i].load(std::memory_order_relaxed);
    out->kernel_launches[i] = kernel_launches_[i].load(std::memory_order_relaxed);
    out->collective_launches[i] = collective_launches_[i].load(std::memory_order_relaxed);
    out->predicted_us[i] = predicted_us_[i].load(std::memory_order_relaxed);
    out->measured_us[i] = measured_us_[i].load(std::memory_order_relaxed);
  }
  for (int i = 0; i < zppNumReasons; ++i) {
    out->passthrough[i] = passthrough_[i].load(std::memory_order_relaxed);
  }
  for (int i = 0; i < zppNumLinks; ++i) {
    out->sent_bytes[i] = sent_bytes_[i].load(std::memory_order_relaxed);
    out->control_sent_bytes[i] = control_sent_bytes_[i].load(std::memory_order_relaxed);
  }
  out->hpz_hits = hpz_hits_.load(std::memory_order_relaxed);
  out->hpz_misses = hpz_misses_.load(std::memory_order_relaxed);
  out->hpz_verify_failures = hpz_verify_failures_.load(std::memory_order_relaxed);
  out->hpz_kept_bytes_peak = hpz_kept_bytes_peak_.load(std::memory_order_relaxed);
  out->host_waits = host_waits_.load(std::memory_order_relaxed);
  out->plain_off_node_bytes = plain_off_node_bytes_.load(std::memory_order_relaxed);
  out->qgz_ef_calls = qgz_ef_calls_.load(std::memory_order_relaxed);
  out->qgz_ef_without = qgz_ef_without_.load(std::memory_order_relaxed);
  out->qwz_delta_calls = qwz_delta_calls_.load(std::memory_order_relaxed);
  out->qwz_delta_full = qwz_delta_full_.load(std::memory_order_relaxed);
}

void StatsCounters::AddDeltaSend(bool delta) {
  (delta ? qwz_delta_calls_ : qwz_delta_full_).fetch_add(1, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddDeltaSend(delta);
}

void StatsCounters::AddFeedback(bool kept) {
  (kept ? qgz_ef_calls_ : qgz_ef_without_).fetch_add(1, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddFeedback(kept);
}

void StatsCounters::AddPlainOffNode(uint64_t bytes) {
  plain_off_node_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddPlainOffNode(bytes);
}

void StatsCounters::AddHostWait() {
  host_waits_.fetch_add(1, std::memory_order_relaxed);
  if (parent_ != nullptr) parent_->AddHostWait();
}

StatsCounters& ProcessStats() {
  static StatsCounters* stats = new StatsCounters();  // alive for atexit reporters
  return *stats;
}

const char* PassThroughReasonName(int reason) {
  // An int, not the enum: C callers may pass anything, and loading a bad enum value is UB.
  switch (reason) {
    case zppReasonDisabled:
      return "disabled";
    case zppReasonDtype:
      return "dtype";
    case zppReasonRedOp:
      return "redop";
    case zppReasonSmall:
      return "small";
    case zppReasonOneRank:
      return "one-rank";
    case zppReasonTopology:
      return "topology";
    case zppReasonConfigMismatch:
      return "config-mismatch";
    case zppReasonNonblocking:
      return "nonblocking";
    case zppReasonInternal:
      return "internal";
    case zppReasonCapture:
      return "capture";
    case zppReasonUnavailable:
      return "unavailable";
    case zppReasonInvalidComm:
      return "unknown-comm";
    case zppReasonInvalidArgs:
      return "invalid-args";
    case zppReasonPool:
      return "pool";
    case zppReasonTuned:
      return "tuned";
    case zppReasonOneNode:
      return "one-node";
    default:
      break;
  }
  return nullptr;
}

}  // namespace zpp
