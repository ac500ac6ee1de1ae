#include "engine/auto_tuner.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <string>

#include "costmodel/cost_model.h"
#include "log/log.h"
#include "tune/calibration.h"

namespace zpp::engine {

namespace {

double SteadyClockUs() {
  using Us = std::chrono::duration<double, std::micro>;
  return Us(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// For the TRACE line: each entry with a call, and this rank's mean per call.
std::string DescribeMeans(std::span<const double> means) {
  std::string out;
  for (size_t entry = 0; entry < means.size(); ++entry) {
    if (!(means[entry] > 0)) continue;
    out.append(" ").append(std::to_string(entry)).append(":");
    out.append(std::to_string(static_cast<int64_t>(means[entry])));
  }
  return out.empty() ? " none" : out;
}

}  // namespace

AutoTuner::AutoTuner(Backend& backend, Stream& control, Engine& engine, StatsCounters& stats,
                     const EngineOptions& options)
    : backend_(backend),
      control_(control),
      engine_(engine),
      stats_(stats),
      settings_(options.settings),
      epoch_(options.epoch),
      step_clock_(SteadyClockUs),
      exchange_(backend, control) {
  // The first epoch is the first trial's: its calls are measured as that candidate's.
  trials_.emplace(options.tuning);
  engine_.SetTuning(trials_->current());
  watched_epoch_ = epoch_();
  advanced_at_us_ = step_clock_();
}

void AutoTuner::SetStepClockForTesting(std::function<double()> clock_us) {
  step_clock_ = std::move(clock_us);
  advanced_at_us_ = step_clock_();
}

Result AutoTuner::Prepare() {
  while (spares_.size() < 2 * kTimedCallsPerEpoch) {
    ZPP_CHECK(backend_.CreateTimingEvent(&spares_.emplace_back()));
  }
  // The larger of an advance's two exchanges: the trials' record (the drift's is one ratio).
  return exchange_.Reserve(tune::kTrialRecordValues * sizeof(double));
}

double AutoTuner::ExpectedUs(const plan::Call& call, const plan::Plan& ran) const {
  const tune::Tuning* tuning = engine_.tuning();  // set while trials_ is: Timed times only then
  // After the trials, what the chosen candidate measured; before, the model's time.
  const double expected = tuning->table.ExpectedUs(call);
  return expected > 0 ? expected : costmodel::TimeOf(ran, call, tuning->model).total_us();
}

Result AutoTuner::Timed(const plan::Call& call, Stream& stream,
                        const std::function<Result(plan::Plan* ran)>& run) {
  plan::Plan ran;
  if (!trials_) return run(&ran);  // a recalibration failed: the static rule, untimed
  if (spares_.size() < 2) {
    if (!told_untimed_) {
      ZPP_INFO(kTune, "more than %zu calls in a step epoch: the rest of the epoch runs untimed",
               kTimedCallsPerEpoch);
      told_untimed_ = true;
    }
    return run(&ran);
  }
  TimedCall timed;
  timed.stop = std::move(spares_.back());
  spares_.pop_back();
  timed.start = std::move(spares_.back());
  spares_.pop_back();
  Result result = backend_.RecordEvent(*timed.start, stream);
  if (result == ncclSuccess) result = run(&ran);
  if (result == ncclSuccess) result = backend_.RecordEvent(*timed.stop, stream);
  if (result != ncclSuccess) {
    spares_.push_back(std::move(timed.start));
    spares_.push_back(std::move(timed.stop));
    return result;
  }
  using Kind = tune::TrialLog::Kind;
  timed.kind = ran.kind == plan::PlanKind::kHierarchicalAllGather ? Kind::kHpzFill
               : ran.kind == plan::PlanKind::kHpzHitAllGather     ? Kind::kHpzHit
                                                                  : Kind::kOther;
  // Only the calls the table decided: a static rule's pass-through is the same in every trial.
  timed.decided = ran.kind != plan::PlanKind::kPassThrough || ran.reason == zppReasonTuned;
  timed.entry = engine_.tuning()->table.EntryOf(call);
  timed.path = PathOf(ran, call.op);
  timed.expected_us = ExpectedUs(call, ran);
  timed.committed_us = timed.decided ? engine_.tuning()->table.ExpectedUs(call) : 0;
  timed_.push_back(std::move(timed));
  return ncclSuccess;
}

Result AutoTuner::ReadBack() {
  Result result = ncclSuccess;
  for (TimedCall& timed : timed_) {
    double us = 0;
    if (result == ncclSuccess) result = backend_.ElapsedUs(*timed.start, *timed.stop, &us);
    spares_.push_back(std::move(timed.start));
    spares_.push_back(std::move(timed.stop));
    if (result != ncclSuccess) continue;
    const auto expected = static_cast<uint64_t>(timed.expected_us + 0.5);
    const auto measured = static_cast<uint64_t>(us + 0.5);
    stats_.AddPredictedUs(timed.path, expected);
    stats_.AddMeasuredUs(timed.path, measured);
    if (timed.committed_us > 0) {
      expected_total_us_ += timed.committed_us;
      measured_total_us_ += us;
    }
    if (trials_ && trials_->running() && timed.decided) trial_log_.Add(timed.entry, us, timed.kind);
  }
  timed_.clear();
  told_untimed_ = false;
  return result;
}

Result AutoTuner::AtCall() {
  const uint64_t epoch = epoch_();
  if (epoch == watched_epoch_) return ncclSuccess;
  const bool one_step = epoch == watched_epoch_ + 1;
  watched_epoch_ = epoch;
  ZPP_CHECK(ReadBack());
  // Read after the read-back's wait for the epoch's last call: on a GPU the host runs ahead, and
  // the time between two such reads is the device's epoch. One whole step; an advance over
  // several (the communicator idle meanwhile) times none.
  const double now = step_clock_();
  const double step_us = one_step ? now - advanced_at_us_ : 0;
  advanced_at_us_ = now;
  if (!trials_) return ncclSuccess;  // a recalibration failed: the static rule from then on
  // Every rank is here at the same call: the first after the same optimizer step.
  return trials_->running() ? AdvanceTrials(step_us) : WatchDrift();
}

double AutoTuner::DriftRatio() { return drift_.Ratio(expected_total_us_, measured_total_us_); }

Result AutoTuner::AdvanceTrials(double step_us) {
  std::vector<double> mine = trial_log_.TakeMeans(trials_->current()->table.hit_ratios());
  ZPP_TRACE(kTune, "trial epoch of %.0f us: this rank's mean per call by table entry (us):%s",
            step_us, DescribeMeans(mine).c_str());
  mine.push_back(step_us);
  std::vector<double> all(tune::kTrialRecordValues * static_cast<size_t>(exchange_.size()));
  ZPP_CHECK(
      exchange_.AllGather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all))));
  trials_->Advance(tune::AgreeOnEpoch(all));
  engine_.SetTuning(trials_->current());
  if (trials_->running()) return ncclSuccess;
  const tune::DecisionTable& table = trials_->current()->table;
  ZPP_INFO(kTune, "trials measured (agreed mean per call): %s",
           table.DescribeTrials(trials_->means()).c_str());
  ZPP_INFO(kTune, "trials' steps (agreed wall time of a step epoch, each table's faster): %s",
           trials_->DescribeSteps().c_str());
  ZPP_INFO(kTune, "committed decision by whole-buffer size: %s", table.Describe().c_str());
  const std::string described = table.Describe();
  if (!committed_.empty()) drift_.Recalibrated(described != committed_);
  committed_ = described;
  DriftRatio();  // the drift is of the committed table's calls only
  return ncclSuccess;
}

Result AutoTuner::WatchDrift() {
  const double mine = DriftRatio();
  std::vector<double> ratios(static_cast<size_t>(exchange_.size()));
  ZPP_CHECK(exchange_.AllGather(std::as_bytes(std::span(&mine, 1)),
                                std::as_writable_bytes(std::span(ratios))));
  if (!drift_.Observe(ratios)) return ncclSuccess;
  const double agreed = tune::DriftWatch::Agree(ratios);
  ++recalibrations_;
  std::shared_ptr<const tune::Tuning> tuning;
  ZPP_CHECK(tune::SetUpTuning(backend_, control_, exchange_, engine_.shape(), settings_, &tuning));
  ZPP_INFO(kTune,
           "measured calls took %.2fx what the committed trials measured for %d step epochs: "
           "recalibrated%s",
           agreed, drift_.required(), tuning ? ", the trials start again" : " (failed)");
  if (tuning == nullptr) {  // the same on every rank: the figures' agreement said so
    trials_.reset();
    engine_.SetTuning(nullptr);
    return ncclSuccess;
  }
  trials_.emplace(std::move(tuning));
  engine_.SetTuning(trials_->current());
  advanced_at_us_ = step_clock_();  // the first trial's epoch starts now, not before calibrating
  return ncclSuccess;
}

}  // namespace zpp::engine
