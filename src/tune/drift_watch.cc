#include "tune/drift_watch.h"

#include <algorithm>
#include <cmath>

namespace zpp::tune {

double DriftWatch::Ratio(double predicted_us_total, double measured_us_total) {
  const double predicted = predicted_us_total - last_predicted_;
  const double measured = measured_us_total - last_measured_;
  last_predicted_ = predicted_us_total;
  last_measured_ = measured_us_total;
  return predicted > 0 ? measured / predicted : 0.0;
}

bool DriftWatch::Observe(std::span<const double> ratios) {
  // The product of the ratios against 2^(+-ranks), by products, frexp and ldexp only: exact or
  // correctly rounded in the same order on every rank, where log and exp are each host's libm.
  static_assert(kDriftFactor == 2.0);
  double mantissa = 1.0;
  int exponent = 0, ranks = 0;
  for (double ratio : ratios) {
    if (!(ratio > 0)) continue;  // a rank with no news
    int scale = 0;
    mantissa = std::frexp(mantissa * ratio, &scale);
    exponent += scale;
    ++ranks;
  }
  if (ranks == 0) return false;  // no news: the count stands
  const bool off =
      std::ldexp(mantissa, exponent - ranks) > 1.0 || std::ldexp(mantissa, exponent + ranks) < 1.0;
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
