// ZPP_TUNE=auto's check of the model against the machine, before it trusts it: the model only
// shortlists (tune/decision_table.h); the ranks then run the shortlisted candidates in turn, one
// step epoch each, for kEpochsPerTrial rounds (interleaved: the machine's warm-up and drift fall
// on every candidate alike), measure every call's wall time per table entry and each epoch's
// wall time, and agree on the means. Per entry the candidate measured fastest, each by the faster
// of its epochs (its first pays for what a candidate does first: connections, pages touched, the
// framework's own first step; and one slow step of a noisy machine is not the candidate's). A
// call's time misses what a candidate costs the rest of the step (codec work on cores or SMs
// that compute shares), so the step has the last word: where the per-call choices differ from
// every trial's table, that table runs kEpochsPerTrial epochs too, and the commit goes to the
// table, tried or per-call, whose step measured shortest. A lossier candidate must be faster by
// more than DecisionTable::kLossyMargin: per entry, the least lossy within it of the fastest;
// per step, the per-call choices stand against a shorter step within it where they are no
// lossier than that step's table. Every rank advances at the same call with the same agreed
// figures, so every rank holds the same table (contract 3). Pure: the caller measures, exchanges
// and installs the tables.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
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

// One trial epoch as the ranks agreed on it: the mean time of a call per table entry (0: no call)
// and the epoch's wall time, from one advance to the next (0: not one whole step epoch).
struct TrialEpoch {
  std::vector<double> means = std::vector<double>(DecisionTable::kEntries);
  double step_us = 0;
};

// What each rank sends at an advance: its mean per entry, then its epoch's wall time.
inline constexpr size_t kTrialRecordValues = DecisionTable::kEntries + 1;

// Every figure's mean over the ranks that have it (a rank without a call of an entry, or without
// a whole epoch, left out): `all` holds kTrialRecordValues values per rank, rank after rank.
TrialEpoch AgreeOnEpoch(std::span<const double> all);

inline constexpr int kEpochsPerTrial = 2;

class TrialSchedule {
 public:
  // Starts with the first trial.
  explicit TrialSchedule(std::shared_ptr<const Tuning> base);

  // The tuning the current epoch runs with.
  const std::shared_ptr<const Tuning>& current() const { return current_; }
  bool running() const { return !committed_; }
  // At an epoch advance: what the ranks agreed the epoch that ended measured. Installs the next
  // trial's table, the per-call choices' for their check, or the committed one.
  void Advance(const TrialEpoch& agreed);
  // For the log: every trial's agreed means (the faster epoch's, per entry).
  const std::vector<std::vector<double>>& means() const { return means_; }
  // For the log: each table's step (the faster epoch's) and the one committed to.
  std::string DescribeSteps() const;

 private:
  // Whether the per-call choices are a trial's table where any trial measured (its step known).
  bool PerCallChoicesTried() const;
  // The per-call choices' step: their own epochs', else that of the trials whose table they are
  // where measured (0: none).
  double PerCallStep() const;
  void Commit();

  std::shared_ptr<const Tuning> base_;
  std::shared_ptr<const Tuning> current_;
  std::vector<std::vector<double>> means_;
  // Per table run: the trials' in order, then the per-call choices' when they were checked.
  std::vector<double> steps_;
  std::optional<DecisionTable> per_call_;  // the per-call choices, once the trials are over
  int epoch_ = 0;                          // of the trials and the check
  int chosen_ = -1;                        // the table committed to, as steps_ counts them
  bool measured_ = false;                  // any call: the steps are compared
  bool committed_ = false;
};

}  // namespace zpp::tune
