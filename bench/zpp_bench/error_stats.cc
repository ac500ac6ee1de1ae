#include "bench/zpp_bench/error_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zpp::bench {

void ErrorStats::Part::Add(double got, double reference, double tolerance) {
  const double error = std::abs(got - reference);
  if (std::isnan(error)) {
    ++wrong;
    max_abs = std::numeric_limits<double>::quiet_NaN();
    squared_error = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  squared_error += error * error;
  squared_reference += reference * reference;
  if (!(max_abs >= error)) max_abs = std::isnan(max_abs) ? max_abs : error;
  if (error > tolerance) ++wrong;
}

void ErrorStats::Merge(const Part& part) {
  std::lock_guard<std::mutex> lock(mutex_);
  squared_error_ += part.squared_error;
  squared_reference_ += part.squared_reference;
  max_abs_ = std::isnan(part.max_abs) ? part.max_abs : std::max(max_abs_, part.max_abs);
  wrong_ += part.wrong;
}

double ErrorStats::RelativeL2() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (squared_reference_ == 0) return squared_error_ == 0 ? 0 : std::sqrt(squared_error_);
  return std::sqrt(squared_error_ / squared_reference_);
}

}  // namespace zpp::bench
