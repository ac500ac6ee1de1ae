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

// The product of the ranks' ratios (those without news left out) as mantissa x 2^exponent, by
// products and frexp only: correctly rounded in the same order on every rank, where log and exp
// are each host's libm.
struct DriftWatch::Product {
  double mantissa = 1.0;
  int exponent = 0;
  int ranks = 0;
};

DriftWatch::Product DriftWatch::Multiply(std::span<const double> ratios) {
  Product product;
  for (double ratio : ratios) {
    if (!(ratio > 0)) continue;  // a rank with no news
    int scale = 0;
    product.mantissa = std::frexp(product.mantissa * ratio, &scale);
    product.exponent += scale;
    ++product.ranks;
  }
  return product;
}

bool DriftWatch::Observe(std::span<const double> ratios) {
  static_assert(kDriftFactor == 2.0);  // the geometric mean against 2^(+-1): the product's exponent
  const Product p = Multiply(ratios);
  if (p.ranks == 0) return false;  // no news: the count stands
  const bool off = std::ldexp(p.mantissa, p.exponent - p.ranks) > 1.0 ||
                   std::ldexp(p.mantissa, p.exponent + p.ranks) < 1.0;
  drifting_ = off ? drifting_ + 1 : 0;
  if (drifting_ < required_) return false;
  drifting_ = 0;
  return true;
}

void DriftWatch::Recalibrated(bool decisions_changed) {
  required_ = decisions_changed ? kDriftEpochs : std::min(2 * required_, kMostDriftEpochs);
}

double DriftWatch::Agree(std::span<const double> ratios) {
  const Product p = Multiply(ratios);
  return p.ranks > 0 ? std::exp2((p.exponent + std::log2(p.mantissa)) / p.ranks) : 1.0;
}

}  // namespace zpp::tune
