#include "tune/trial_schedule.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace zpp::tune {

void TrialLog::Add(int entry, double us, Kind kind) {
  const auto e = static_cast<size_t>(entry);
  total_us_[e] += us;
  ++calls_[e];
  fills_[e] += kind == Kind::kHpzFill;
  hits_[e] += kind == Kind::kHpzHit;
}

std::vector<double> TrialLog::TakeMeans(std::span<const float> hit_ratios) {
  std::vector<double> means(total_us_.size());
  for (size_t e = 0; e < means.size(); ++e) {
    if (calls_[e] == 0) continue;
    means[e] = total_us_[e] / calls_[e];
    if (fills_[e] > 0 && hits_[e] == 0 && e < hit_ratios.size() && hit_ratios[e] > 0) {
      means[e] *= (1.0 + hit_ratios[e]) / 2;
    }
  }
  total_us_.assign(total_us_.size(), 0);
  calls_.assign(calls_.size(), 0);
  fills_.assign(fills_.size(), 0);
  hits_.assign(hits_.size(), 0);
  return means;
}

namespace {

// The mean of the ranks' figure at `at`, `at + stride`, ... (ranks without one left out).
double MeanOverRanks(std::span<const double> all, size_t at, size_t stride) {
  double sum = 0;
  int ranks = 0;
  for (; at < all.size(); at += stride) {
    if (!(all[at] > 0)) continue;
    sum += all[at];
    ++ranks;
  }
  return ranks > 0 ? sum / ranks : 0;
}

void KeepFaster(double& best, double us) {
  if (us > 0 && (best == 0 || us < best)) best = us;
}

}  // namespace

TrialEpoch AgreeOnEpoch(std::span<const double> all) {
  TrialEpoch agreed;
  for (size_t e = 0; e < agreed.means.size(); ++e) {
    agreed.means[e] = MeanOverRanks(all, e, kTrialRecordValues);
  }
  agreed.step_us = MeanOverRanks(all, DecisionTable::kEntries, kTrialRecordValues);
  return agreed;
}

TrialSchedule::TrialSchedule(std::shared_ptr<const Tuning> base) : base_(std::move(base)) {
  auto first = std::make_shared<Tuning>(*base_);
  first->table = base_->table.ForTrial(0);
  current_ = std::move(first);
}

void TrialSchedule::Advance(const TrialEpoch& agreed) {
  if (committed_) return;
  const int trials = base_->table.Trials();
  const int tried_epochs = kEpochsPerTrial * trials;
  const auto run = static_cast<size_t>(epoch_ < tried_epochs ? epoch_ % trials : trials);
  if (run < static_cast<size_t>(trials)) {
    if (means_.size() <= run) means_.resize(run + 1, std::vector<double>(agreed.means.size()));
    for (size_t e = 0; e < means_[run].size() && e < agreed.means.size(); ++e) {
      KeepFaster(means_[run][e], agreed.means[e]);
    }
  }
  if (steps_.size() <= run) steps_.resize(run + 1);
  KeepFaster(steps_[run], agreed.step_us);
  ++epoch_;
  auto tuning = std::make_shared<Tuning>(*base_);
  if (epoch_ < tried_epochs) {  // the candidates in turn, round after round
    tuning->table = base_->table.ForTrial(epoch_ % trials);
    current_ = std::move(tuning);
    return;
  }
  if (epoch_ == tried_epochs) {
    per_call_ = base_->table.Committed(means_);
    measured_ = std::any_of(means_.begin(), means_.end(), [](const auto& trial) {
      return std::any_of(trial.begin(), trial.end(), [](double us) { return us > 0; });
    });
    if (measured_ && !PerCallChoicesTried()) {  // their step is not known yet: run them
      tuning->table = *per_call_;
      current_ = std::move(tuning);
      return;
    }
    Commit();
  } else if (epoch_ == tried_epochs + kEpochsPerTrial) {  // the per-call choices' epochs ran
    Commit();
  }
}

bool TrialSchedule::PerCallChoicesTried() const {
  for (int t = 0; t < base_->table.Trials(); ++t) {
    if (base_->table.ForTrial(t).SameWhereMeasured(*per_call_, means_)) return true;
  }
  return false;
}

double TrialSchedule::PerCallStep() const {
  const auto trials = static_cast<size_t>(base_->table.Trials());
  if (steps_.size() > trials) return steps_[trials];  // they ran epochs of their own
  double step = 0;
  for (size_t t = 0; t < steps_.size(); ++t) {
    if (base_->table.ForTrial(static_cast<int>(t)).SameWhereMeasured(*per_call_, means_)) {
      KeepFaster(step, steps_[t]);
    }
  }
  return step;
}

void TrialSchedule::Commit() {
  const int trials = base_->table.Trials();
  chosen_ = trials;  // the per-call choices, unless a table's step measured shorter
  double shortest = 0;
  int fastest = trials;
  for (size_t run = 0; run < steps_.size() && measured_; ++run) {
    const double before = shortest;
    KeepFaster(shortest, steps_[run]);
    if (shortest != before) fastest = static_cast<int>(run);
  }
  // The per-call choices (the least lossy within the margin, per entry) stand against a table
  // whose step was shorter by less than the margin (the machine's noise), unless they are lossier
  // than that table somewhere.
  const double own = measured_ ? PerCallStep() : 0;
  const bool own_stands = own > 0 && own <= shortest * (1 + DecisionTable::kLossyMargin) &&
                          (fastest == trials || per_call_->NoLossierWhereMeasured(
                                                    base_->table.ForTrial(fastest), means_));
  if (!own_stands) chosen_ = fastest;
  auto tuning = std::make_shared<Tuning>(*base_);
  const bool per_call =
      chosen_ == trials || base_->table.ForTrial(chosen_).SameWhereMeasured(*per_call_, means_);
  tuning->table = per_call ? *per_call_ : base_->table.CommittedToTrial(chosen_, means_);
  current_ = std::move(tuning);
  committed_ = true;
}

std::string TrialSchedule::DescribeSteps() const {
  if (!measured_) return "not compared: no call measured";
  const int trials = base_->table.Trials();
  std::string out;
  for (size_t run = 0; run < steps_.size(); ++run) {
    char text[64];
    if (static_cast<int>(run) == trials) {
      std::snprintf(text, sizeof(text), "the per-call choices");
    } else {
      std::snprintf(text, sizeof(text), "trial %zu", run + 1);
    }
    out.append(out.empty() ? "" : ", ").append(text);
    if (steps_[run] > 0) {
      std::snprintf(text, sizeof(text), " %.2f ms", steps_[run] / 1000);
      out.append(text);
    } else {
      out.append(" not timed");
    }
  }
  if (chosen_ == trials) return out + " -> the per-call choices";
  return out + " -> trial " + std::to_string(chosen_ + 1) + "'s table";
}

}  // namespace zpp::tune
