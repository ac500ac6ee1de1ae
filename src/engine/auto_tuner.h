// ZPP_TUNE=auto after set-up, one per communicator (docs/architecture.md, "ZPP_TUNE=auto"):
// every call it is given is timed by two timing events on the call's own stream, never by a
// host wait. At the first call of a new step epoch the ranks read the last epoch's times back
// (the one host wait, on work an optimizer step old) and the host's time since the last advance,
// read after that wait (the step: on a GPU, the device's), agree on them, and move the trials on
// (tune/trial_schedule.h), or, once committed, watch the drift (tune/drift_watch.h). The stats'
// predicted and measured times (zppStats_t) count an epoch's calls at that read-back. One call at
// a time, as NCCL requires of a communicator (the engine's own rule).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "engine/backend_byte_all_gather.h"
#include "engine/engine.h"
#include "stats/stats.h"
#include "tune/drift_watch.h"
#include "tune/trial_schedule.h"

namespace zpp::engine {

class AutoTuner {
 public:
  // `options.tuning`: set-up's (tune::SetUpTuning); from here on `engine` runs the first trial.
  // `control`: the stream of the ranks' exchanges at an advance.
  AutoTuner(Backend& backend, Stream& control, Engine& engine, StatsCounters& stats,
            const EngineOptions& options);
  // At set-up: the timing events and the advances' exchange buffers (the collective path makes
  // none).
  Result Prepare();
  // Before a call is planned, on every rank at the same call (outside NCCL groups and graph
  // captures): at a new step epoch, the read-back, the agreement and the next table.
  Result AtCall();
  // `run` enqueues `call` on `stream` and reports the plan that ran (NCCL's, where the table
  // sent the call there); timed while the epoch has events left.
  Result Timed(const plan::Call& call, Stream& stream,
               const std::function<Result(plan::Plan* ran)>& run);

  // Whether the trials are still running (zpp-bench runs them before it measures).
  bool trials_running() const { return trials_ && trials_->running(); }
  // How many times drift made the ranks recalibrate.
  int recalibrations() const { return recalibrations_; }
  // Tests: the clock the step epochs are timed by, in microseconds (by default steady_clock's).
  void SetStepClockForTesting(std::function<double()> clock_us);

  // Timed calls per step epoch; later ones in the epoch run untimed (the same calls on every
  // rank, so every rank measures the same ones).
  static constexpr size_t kTimedCallsPerEpoch = 1024;

 private:
  struct TimedCall {
    int entry = 0;
    tune::TrialLog::Kind kind = tune::TrialLog::Kind::kOther;
    zppPath_t path = zppPathPassThrough;
    bool decided = false;     // by the table: the trials' measurement
    double expected_us = 0;   // for the stats: the trials' measurement, else the model's time
    double committed_us = 0;  // the trials' measurement of its entry (0: none): what drift reads
    std::unique_ptr<Event> start, stop;
  };
  // The last epoch's times into the trials' log, the drift figures and the stats.
  Result ReadBack();
  // `step_us`: this rank's wall time of the epoch that ended (0: not one whole epoch).
  Result AdvanceTrials(double step_us);
  Result WatchDrift();
  double DriftRatio();  // this rank's measured over expected time since the last look
  double ExpectedUs(const plan::Call& call, const plan::Plan& ran) const;

  Backend& backend_;
  Stream& control_;
  Engine& engine_;
  StatsCounters& stats_;
  const plan::Settings settings_;
  const std::function<uint64_t()> epoch_;
  uint64_t watched_epoch_ = 0;
  std::function<double()> step_clock_;
  double advanced_at_us_ = 0;  // the step clock at the last advance (at first, at set-up)
  std::optional<tune::TrialSchedule> trials_;  // empty: a recalibration failed, the static rule
  tune::TrialLog trial_log_;
  tune::DriftWatch drift_;
  std::string committed_;  // the last commit's table, to tell whether a recalibration changed it
  // The drift's running totals: only calls the table decided whose entry the trials measured (the
  // model's time for the rest is a prior, not a measurement to drift from).
  double expected_total_us_ = 0, measured_total_us_ = 0;
  std::vector<TimedCall> timed_;                // this epoch's, read back at the next advance
  std::vector<std::unique_ptr<Event>> spares_;  // timing events free for the next calls
  BackendByteAllGather exchange_;               // the ranks' agreement at each advance
  bool told_untimed_ = false;
  int recalibrations_ = 0;
};

}  // namespace zpp::engine
