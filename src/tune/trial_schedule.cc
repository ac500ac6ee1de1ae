#include "tune/trial_schedule.h"

namespace zpp::tune {

void TrialLog::Add(int entry, double us) {
  total_us_[static_cast<size_t>(entry)] += us;
  ++calls_[static_cast<size_t>(entry)];
}

std::vector<double> TrialLog::TakeMeans() {
  std::vector<double> means(total_us_.size());
  for (size_t e = 0; e < means.size(); ++e) {
    if (calls_[e] > 0) means[e] = total_us_[e] / calls_[e];
  }
  total_us_.assign(total_us_.size(), 0);
  calls_.assign(calls_.size(), 0);
  return means;
}

std::vector<double> AgreeOnMeans(std::span<const double> all) {
  constexpr size_t kEntries = DecisionTable::kEntries;
  std::vector<double> agreed(kEntries);
  for (size_t e = 0; e < kEntries; ++e) {
    double sum = 0;
    int ranks = 0;
    for (size_t at = e; at < all.size(); at += kEntries) {
      if (!(all[at] > 0)) continue;
      sum += all[at];
      ++ranks;
    }
    if (ranks > 0) agreed[e] = sum / ranks;
  }
  return agreed;
}

TrialSchedule::TrialSchedule(std::shared_ptr<const Tuning> base)
    : base_(std::move(base)), current_(base_) {}

void TrialSchedule::Advance(std::span<const double> agreed_means) {
  if (committed_) return;
  auto next = std::make_shared<Tuning>(*base_);
  if (trial_ >= 0) means_.emplace_back(agreed_means.begin(), agreed_means.end());
  ++trial_;
  if (trial_ < base_->table.Trials()) {
    next->table = base_->table.ForTrial(trial_);
  } else {
    next->table = base_->table.Committed(means_);
    committed_ = true;
  }
  current_ = std::move(next);
}

}  // namespace zpp::tune
