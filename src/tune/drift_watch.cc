#include "tune/drift_watch.h"

#include <algorithm>
#include <cmath>

namespace zpp::tune {

double DriftWatch::Ratio(uint64_t predicted_us_total, uint64_t measured_us_total) {
  const uint64_t predicted = predicted_us_total - last_predicted_;
  const uint64_t measured = measured_us_total - last_measured_;
  last_predicted_ = predicted_us_total;
  last_measured_ = measured_us_total;
  if (predicted == 0) return 1.0;
  return static_cast<double>(measured) / static_cast<double>(predicted);
}

bool DriftWatch::Observe(double agreed_ratio) {
  const bool off = agreed_ratio > kDriftFactor || agreed_ratio < 1.0 / kDriftFactor;
  drifting_ = off ? drifting_ + 1 : 0;
  if (drifting_ < required_) return false;
  drifting_ = 0;
  return true;
}

void DriftWatch::Recalibrated(bool decisions_changed) {
  required_ = decisions_changed ? kDriftEpochs : std::min(2 * required_, kMostDriftEpochs);
}

double DriftWatch::Agree(std::span<const double> ratios) {
  double log_sum = 0;
  int ranks = 0;
  for (double ratio : ratios) {
    if (!(ratio > 0)) continue;  // a rank with nothing to say
    log_sum += std::log(ratio);
    ++ranks;
  }
  return ranks > 0 ? std::exp(log_sum / ranks) : 1.0;
}

}  // namespace zpp::tune
