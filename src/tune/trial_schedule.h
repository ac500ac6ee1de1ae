// ZPP_TUNE=auto's check of the model against the machine, before it trusts it: the model only
// shortlists (tune/decision_table.h); the ranks then run each shortlisted candidate for
// kEpochsPerTrial step epochs, measure every call's wall time per table entry, agree on the means,
// and commit to the candidate measured fastest, each by the faster of its epochs (its first pays
// for what a candidate does first: connections, pages touched, the framework's own first step;
// and one slow step of a noisy machine is not the candidate's). Every rank advances at the same
// call with the same agreed means, so every rank holds the same table (contract 3). Pure: the
// caller measures, exchanges and installs the tables.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "plan/plan.h"
#include "tune/decision_table.h"

namespace zpp::tune {

// This rank's wall time per table entry over one epoch.
class TrialLog {
 public:
  enum class Kind { kOther, kHpzFill, kHpzHit };
  void Add(int entry, double us, Kind kind = Kind::kOther);
  // The mean time of a call per entry since the last take (0: no call), and a fresh start. An
  // entry whose hpZ fills bought no hit in the epoch (a trial's calls need not come in forward and
  // backward pairs) counts the hits it buys in training, one per fill as FSDP and ZeRO-3 gather, at
  // the fill's time times `hit_ratios` (the model's hit over fill; DecisionTable::hit_ratios).
  std::vector<double> TakeMeans(std::span<const float> hit_ratios);

 private:
  std::vector<double> total_us_ = std::vector<double>(DecisionTable::kEntries);
  std::vector<uint32_t> calls_ = std::vector<uint32_t>(DecisionTable::kEntries);
  std::vector<uint32_t> fills_ = std::vector<uint32_t>(DecisionTable::kEntries);
  std::vector<uint32_t> hits_ = std::vector<uint32_t>(DecisionTable::kEntries);
};

// The mean of every rank's means per entry (ranks without a call of the entry left out):
// `all` holds kEntries values per rank, rank after rank.
std::vector<double> AgreeOnMeans(std::span<const double> all);

inline constexpr int kEpochsPerTrial = 2;

class TrialSchedule {
 public:
  // Starts with the first trial.
  explicit TrialSchedule(std::shared_ptr<const Tuning> base);

  // The tuning the current epoch runs with.
  const std::shared_ptr<const Tuning>& current() const { return current_; }
  bool running() const { return !committed_; }
  // At an epoch advance: `agreed_means` of the epoch that ended. Installs the next trial's table,
  // or, after the last, the committed one.
  void Advance(std::span<const double> agreed_means);
  // For the log: every trial's agreed means (the faster epoch's, per entry).
  const std::vector<std::vector<double>>& means() const { return means_; }

 private:
  std::shared_ptr<const Tuning> base_;
  std::shared_ptr<const Tuning> current_;
  std::vector<std::vector<double>> means_;
  int epoch_ = 0;  // of the trials
  bool committed_ = false;
};

}  // namespace zpp::tune
