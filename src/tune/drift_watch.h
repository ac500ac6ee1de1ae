// ZPP_TUNE=auto checks its model against what calls really take: at each step-epoch advance every
// rank gives the ratio of the measured time of its tuned calls since the last look to what the
// trials measured for their size band (calls of a band no trial measured are left out), and after
// kDriftEpochs epochs in a row in which the ranks' geometric mean ratio is more than 2x off either
// way, every rank recalibrates at the same call (contract 3). The mean, not the rank furthest from
// 1: one rank that waited for later peers is not the link drifting. A recalibration that changed
// no decision doubles the epochs the next one waits for (a model off by a steady factor on this
// machine would otherwise recalibrate every few steps for nothing). Pure: the caller measures,
// exchanges and recalibrates.
#pragma once

#include <span>

namespace zpp::tune {

inline constexpr double kDriftFactor = 2.0;
inline constexpr int kDriftEpochs = 3;
inline constexpr int kMostDriftEpochs = 384;

class DriftWatch {
 public:
  // This rank's ratio since the last look, from its running totals (0: nothing was predicted, no
  // news).
  double Ratio(double predicted_us_total, double measured_us_total);
  // Given every rank's ratio, the same on every rank: true when the ranks recalibrate now (the
  // count starts again). An epoch in which no rank has news leaves the count as it was.
  bool Observe(std::span<const double> ratios);
  // After a recalibration: whether it changed any decision (every rank knows the same).
  void Recalibrated(bool decisions_changed);
  // The epochs in a row that Observe waits for now (those the last true of Observe waited for).
  int required() const { return required_; }

  // For the log: the geometric mean of every rank's ratio (ranks without one left out; none: 1).
  static double Agree(std::span<const double> ratios);

 private:
  struct Product;
  static Product Multiply(std::span<const double> ratios);

  double last_predicted_ = 0;
  double last_measured_ = 0;
  int drifting_ = 0;
  int required_ = kDriftEpochs;
};

}  // namespace zpp::tune
