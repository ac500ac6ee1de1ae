#include "tune/trial_schedule.h"

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

TrialSchedule::TrialSchedule(std::shared_ptr<const Tuning> base) : base_(std::move(base)) {
  auto first = std::make_shared<Tuning>(*base_);
  first->table = base_->table.ForTrial(0);
  current_ = std::move(first);
}

void TrialSchedule::Advance(std::span<const double> agreed_means) {
  if (committed_) return;
  const size_t candidate = static_cast<size_t>(epoch_ / kEpochsPerTrial);
  if (means_.size() <= candidate) means_.emplace_back(agreed_means.size());
  std::vector<double>& best = means_[candidate];
  for (size_t e = 0; e < best.size() && e < agreed_means.size(); ++e) {
    const double us = agreed_means[e];
    if (us > 0 && (best[e] == 0 || us < best[e])) best[e] = us;
  }
  ++epoch_;
  const bool trying = epoch_ < kEpochsPerTrial * base_->table.Trials();
  if (trying && epoch_ % kEpochsPerTrial != 0) return;  // the same candidate's next epoch
  auto next = std::make_shared<Tuning>(*base_);
  if (trying) {
    next->table = base_->table.ForTrial(epoch_ / kEpochsPerTrial);
  } else {
    next->table = base_->table.Committed(means_);
    committed_ = true;
  }
  current_ = std::move(next);
}

}  // namespace zpp::tune
