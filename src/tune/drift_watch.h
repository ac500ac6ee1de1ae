// ZPP_TUNE=auto checks its model against what calls really take: at each step-epoch advance every
// rank gives the ratio of the measured time of its tuned calls since the last look to what the
// trials measured for their size band (calls of a band no trial measured are left out), the ranks
// agree on the geometric mean of their ratios (the trials' times are the ranks' mean too: one
// rank that waited for later peers is not the link drifting), and after kDriftEpochs epochs in a
// row more than 2x off either way, every rank recalibrates at the same call (contract 3). A
// recalibration that changed no decision doubles the epochs the next one waits for (a model off by
// a steady factor on this machine would otherwise recalibrate every few steps for nothing). Pure:
// the caller measures, exchanges and recalibrates.
#pragma once

#include <cstdint>
#include <span>

namespace zpp::tune {

inline constexpr double kDriftFactor = 2.0;
inline constexpr int kDriftEpochs = 3;
inline constexpr int kMostDriftEpochs = 384;

class DriftWatch {
 public:
  // This rank's ratio since the last look, from its running totals (1 when nothing was predicted).
  double Ratio(uint64_t predicted_us_total, uint64_t measured_us_total);
  // Given the agreed ratio: true when the ranks recalibrate now (the count starts again).
  bool Observe(double agreed_ratio);
  // After a recalibration: whether it changed any decision (every rank knows the same).
  void Recalibrated(bool decisions_changed);

  // The geometric mean of every rank's ratio (ranks without one left out; none: 1).
  static double Agree(std::span<const double> ratios);

 private:
  uint64_t last_predicted_ = 0;
  uint64_t last_measured_ = 0;
  int drifting_ = 0;
  int required_ = kDriftEpochs;
};

}  // namespace zpp::tune
