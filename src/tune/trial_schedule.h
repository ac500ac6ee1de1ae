// ZPP_TUNE=auto's check of the model against the machine, before it trusts it: the model only
// shortlists (tune/decision_table.h); the ranks then run each shortlisted candidate for one step
// epoch, measure every call's wall time per table entry, agree on the means, and commit to the
// candidate measured fastest. The first epoch after set-up is a warm-up (connections, first
// touch, the framework's own first step) and is not measured. Every rank advances at the same
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
  void Add(int entry, double us);
  // The mean time of a call per entry since the last take (0: no call), and a fresh start.
  std::vector<double> TakeMeans();

 private:
  std::vector<double> total_us_ = std::vector<double>(DecisionTable::kEntries);
  std::vector<uint32_t> calls_ = std::vector<uint32_t>(DecisionTable::kEntries);
};

// The mean of every rank's means per entry (ranks without a call of the entry left out):
// `all` holds kEntries values per rank, rank after rank.
std::vector<double> AgreeOnMeans(std::span<const double> all);

class TrialSchedule {
 public:
  // Starts in the warm-up epoch, with the model's choices.
  explicit TrialSchedule(std::shared_ptr<const Tuning> base);

  // The tuning the current epoch runs with.
  const std::shared_ptr<const Tuning>& current() const { return current_; }
  bool running() const { return !committed_; }
  // Whether this epoch's calls are a trial's (the warm-up's are not).
  bool measuring() const { return trial_ >= 0 && !committed_; }
  // At an epoch advance: `agreed_means` of the epoch that ended. Installs the next trial's table,
  // or, after the last, the committed one.
  void Advance(std::span<const double> agreed_means);
  // After the commit, for the log: every trial's agreed means.
  const std::vector<std::vector<double>>& means() const { return means_; }

 private:
  std::shared_ptr<const Tuning> base_;
  std::shared_ptr<const Tuning> current_;
  std::vector<std::vector<double>> means_;
  int trial_ = -1;  // -1: the warm-up
  bool committed_ = false;
};

}  // namespace zpp::tune
