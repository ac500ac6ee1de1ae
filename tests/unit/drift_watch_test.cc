// ZPP_TUNE=auto's check of its model (tune/drift_watch.h): recalibration after kDriftEpochs
// epochs in a row in which the ranks' geometric mean ratio is more than 2x off either way, never
// on one odd epoch, and an epoch without news leaves the count as it was.
#include "tune/drift_watch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace zpp::tune {
namespace {

// One rank's ratio.
bool Observe(DriftWatch& watch, double ratio) { return watch.Observe(std::vector<double>{ratio}); }

TEST(DriftWatchTest, RatioIsOfTheCallsSinceTheLastLook) {
  DriftWatch watch;
  EXPECT_DOUBLE_EQ(watch.Ratio(100, 300), 3.0);
  EXPECT_DOUBLE_EQ(watch.Ratio(300, 400), 0.5);  // 200 predicted, 100 measured since
  EXPECT_DOUBLE_EQ(watch.Ratio(300, 400), 0.0);  // nothing predicted since: no news
}

TEST(DriftWatchTest, RecalibratesAfterEpochsInARowBeyondTwiceEitherWay) {
  for (double off : {2.5, 0.3}) {
    DriftWatch watch;
    for (int epoch = 1; epoch < kDriftEpochs; ++epoch) EXPECT_FALSE(Observe(watch, off));
    EXPECT_TRUE(Observe(watch, off)) << off;
    EXPECT_FALSE(Observe(watch, off)) << "the count starts again after a recalibration";
  }
}

TEST(DriftWatchTest, ARecalibrationThatChangedNothingDoublesTheWait) {
  DriftWatch watch;
  auto epochs_to_recalibrate = [&] {
    int epochs = 1;
    while (!Observe(watch, 3.0)) ++epochs;
    return epochs;
  };
  EXPECT_EQ(epochs_to_recalibrate(), kDriftEpochs);
  watch.Recalibrated(false);
  EXPECT_EQ(epochs_to_recalibrate(), 2 * kDriftEpochs);
  EXPECT_EQ(watch.required(), 2 * kDriftEpochs);  // what the log line names
  watch.Recalibrated(false);
  EXPECT_EQ(epochs_to_recalibrate(), 4 * kDriftEpochs);
  watch.Recalibrated(true);  // the new figures changed a decision: watch closely again
  EXPECT_EQ(epochs_to_recalibrate(), kDriftEpochs);
}

TEST(DriftWatchTest, AnEpochWithinTwiceStartsTheCountAgain) {
  DriftWatch watch;
  for (int round = 0; round < 4; ++round) {
    for (int epoch = 1; epoch < kDriftEpochs; ++epoch) EXPECT_FALSE(Observe(watch, 3.0));
    EXPECT_FALSE(Observe(watch, 1.9));  // within 2x: the model holds
  }
  EXPECT_FALSE(Observe(watch, 2.0));  // exactly 2x is not beyond it
}

// Epochs in which no rank ran a measured call (ratio 0 everywhere) neither count nor reset.
TEST(DriftWatchTest, AnEpochWithoutNewsLeavesTheCount) {
  DriftWatch watch;
  for (int epoch = 1; epoch < kDriftEpochs; ++epoch) EXPECT_FALSE(Observe(watch, 3.0));
  EXPECT_FALSE(watch.Observe(std::vector<double>{0.0, 0.0}));
  EXPECT_TRUE(Observe(watch, 3.0));
}

// A rank whose calls waited for later peers reads far above its trials; the link drifting moves
// every rank. The ranks decide by their geometric mean, exactly at 2x (the product against 2^n).
TEST(DriftWatchTest, RanksDecideByTheGeometricMeanOfTheirRatios) {
  auto recalibrates = [](const std::vector<double>& ratios) {
    DriftWatch watch;
    for (int epoch = 1; epoch < kDriftEpochs; ++epoch) watch.Observe(ratios);
    return watch.Observe(ratios);
  };
  EXPECT_FALSE(recalibrates({3.0, 1.0, 1.0, 1.0}));  // one rank's wait
  EXPECT_FALSE(recalibrates({0.5, 2.0, 1.0, 1.0}));
  EXPECT_FALSE(recalibrates({4.0, 1.0}));                     // exactly 2x: not beyond
  EXPECT_TRUE(recalibrates({4.0, 1.0000001}));                // just beyond
  EXPECT_TRUE(recalibrates({0.25, 0.9999999}));               // just beyond, the other way
  EXPECT_TRUE(recalibrates({3.0, 0.0, 3.0, 3.0}));            // a rank without news left out
  EXPECT_TRUE(recalibrates(std::vector<double>(4096, 2.5)));  // no overflow of the product
}

TEST(DriftWatchTest, TheLoggedRatioIsTheGeometricMean) {
  EXPECT_NEAR(DriftWatch::Agree(std::vector<double>{0.5, 2.0, 1.0, 1.0}), 1.0, 1e-12);
  EXPECT_NEAR(DriftWatch::Agree(std::vector<double>{3.0, 1.0, 1.0, 1.0}), std::pow(3.0, 0.25),
              1e-12);
  EXPECT_DOUBLE_EQ(DriftWatch::Agree(std::vector<double>{0.0, 0.0}), 1.0);  // nothing to say
}

}  // namespace
}  // namespace zpp::tune
