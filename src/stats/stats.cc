#include "stats/stats.h"

#include "common/enum_names.h"

namespace zpp {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}  // namespace

template <typename Add>
void StatsCounters::ForChain(const Add& add) {
  for (StatsCounters* counters = this; counters != nullptr; counters = counters->parent_) {
    add(*counters);
  }
}

void StatsCounters::AddCall(zppPath_t path, uint64_t input_bytes) {
  ForChain([&](StatsCounters& counters) {
    counters.calls_[path].fetch_add(1, kRelaxed);
    counters.input_bytes_[path].fetch_add(input_bytes, kRelaxed);
  });
}

void StatsCounters::AddPassThrough(zppPassThroughReason_t reason, uint64_t input_bytes) {
  ForChain([&](StatsCounters& counters) {
    counters.calls_[zppPathPassThrough].fetch_add(1, kRelaxed);
    counters.input_bytes_[zppPathPassThrough].fetch_add(input_bytes, kRelaxed);
    counters.passthrough_[reason].fetch_add(1, kRelaxed);
  });
}

void StatsCounters::AddSent(zppLink_t link, uint64_t bytes) {
  ForChain([&](StatsCounters& counters) { counters.sent_bytes_[link].fetch_add(bytes, kRelaxed); });
}

void StatsCounters::AddControlSent(zppLink_t link, uint64_t bytes) {
  ForChain([&](StatsCounters& counters) {
    counters.control_sent_bytes_[link].fetch_add(bytes, kRelaxed);
  });
}

void StatsCounters::AddHpzHit() {
  ForChain([&](StatsCounters& counters) { counters.hpz_hits_.fetch_add(1, kRelaxed); });
}

void StatsCounters::AddHpzMiss() {
  ForChain([&](StatsCounters& counters) { counters.hpz_misses_.fetch_add(1, kRelaxed); });
}

void StatsCounters::AddHpzVerifyFailures(uint64_t n) {
  ForChain([&](StatsCounters& counters) { counters.hpz_verify_failures_.fetch_add(n, kRelaxed); });
}

void StatsCounters::AddLaunches(zppPath_t path, uint64_t kernels, uint64_t collectives) {
  ForChain([&](StatsCounters& counters) {
    counters.kernel_launches_[path].fetch_add(kernels, kRelaxed);
    counters.collective_launches_[path].fetch_add(collectives, kRelaxed);
  });
}

void StatsCounters::AddPredictedUs(zppPath_t path, uint64_t us) {
  ForChain([&](StatsCounters& counters) { counters.predicted_us_[path].fetch_add(us, kRelaxed); });
}

void StatsCounters::AddMeasuredUs(zppPath_t path, uint64_t us) {
  ForChain([&](StatsCounters& counters) { counters.measured_us_[path].fetch_add(us, kRelaxed); });
}

void StatsCounters::NoteHpzKeptBytes(uint64_t bytes) {
  ForChain([&](StatsCounters& counters) {
    std::atomic<uint64_t>& most = counters.hpz_kept_bytes_peak_;
    uint64_t peak = most.load(kRelaxed);
    while (bytes > peak && !most.compare_exchange_weak(peak, bytes, kRelaxed)) {
    }
  });
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
  ForChain([&](StatsCounters& counters) {
    (delta ? counters.qwz_delta_calls_ : counters.qwz_delta_full_).fetch_add(1, kRelaxed);
  });
}

void StatsCounters::AddFeedback(bool kept) {
  ForChain([&](StatsCounters& counters) {
    (kept ? counters.qgz_ef_calls_ : counters.qgz_ef_without_).fetch_add(1, kRelaxed);
  });
}

void StatsCounters::AddPlainOffNode(uint64_t bytes) {
  ForChain(
      [&](StatsCounters& counters) { counters.plain_off_node_bytes_.fetch_add(bytes, kRelaxed); });
}

void StatsCounters::AddHostWait() {
  ForChain([&](StatsCounters& counters) { counters.host_waits_.fetch_add(1, kRelaxed); });
}

StatsCounters& ProcessStats() {
  static StatsCounters* stats = new StatsCounters();  // alive for atexit reporters
  return *stats;
}

const char* PassThroughReasonName(int reason) {
  // An int, not the enum: C callers may pass anything, and loading a bad enum value is UB.
  static constexpr NamedValue<int> kNames[] = {{zppReasonDisabled, "disabled"},
                                               {zppReasonDtype, "dtype"},
                                               {zppReasonRedOp, "redop"},
                                               {zppReasonSmall, "small"},
                                               {zppReasonOneRank, "one-rank"},
                                               {zppReasonTopology, "topology"},
                                               {zppReasonConfigMismatch, "config-mismatch"},
                                               {zppReasonNonblocking, "nonblocking"},
                                               {zppReasonInternal, "internal"},
                                               {zppReasonCapture, "capture"},
                                               {zppReasonUnavailable, "unavailable"},
                                               {zppReasonInvalidComm, "unknown-comm"},
                                               {zppReasonInvalidArgs, "invalid-args"},
                                               {zppReasonPool, "pool"},
                                               {zppReasonTuned, "tuned"},
                                               {zppReasonOneNode, "one-node"}};
  static_assert(NamesEachOnce(kNames, zppNumReasons));
  const std::string_view name = NameIn(kNames, reason, "");
  return name.empty() ? nullptr : name.data();  // literals: end in '\0'
}

}  // namespace zpp
