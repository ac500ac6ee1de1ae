// ZPP_TUNE=auto's trials (tune/trial_schedule.h, the shortlist of tune/decision_table.h): the
// model shortlists, each candidate runs two epochs, and the commit takes the candidate measured
// fastest by its faster epoch, whatever the model preferred, unless a table's step measured
// shorter; a lossier candidate must be faster by more than DecisionTable::kLossyMargin; hpZ's
// candidates run last and count the hits they buy; the tuner never chooses qwZ with fewer bits
// than the user's.
#include "tune/trial_schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <vector>

#include "costmodel/cost_model.h"
#include "plan/planner.h"
#include "sim/cluster_layout.h"

namespace zpp::tune {
namespace {

const plan::Shape kShape = sim::ShapeOf(sim::ClusterLayout::Uniform(2, 2));

plan::Settings AllOn(int bits = 8) {
  plan::Settings s;
  s.qwz = s.hpz = s.qgz = true;
  s.qwz_bits = s.qgz_bits_intra = bits;
  s.min_bytes = 0;
  return s;
}

// A link and codecs of about the same speed: the model cannot rule much out.
costmodel::ClusterModel CloseCall() {
  costmodel::ClusterModel m = costmodel::DefaultModel(2, 2, 20, 8);
  m.kernels = {2, 2, 2, 20};
  return m;
}

const plan::Call kGather{plan::CollectiveOp::kAllGather, uint64_t{1} << 20, ncclFloat32,
                         plan::Reduction::kNone};

// An epoch whose calls of `entry` took `us` on average, and whose step took `step_us`.
TrialEpoch Measured(int entry, double us, double step_us = 0) {
  TrialEpoch epoch;
  epoch.means[static_cast<size_t>(entry)] = us;
  epoch.step_us = step_us;
  return epoch;
}

std::shared_ptr<const Tuning> Base(const plan::Settings& user) {
  auto tuning = std::make_shared<Tuning>();
  tuning->model = CloseCall();
  tuning->table = DecisionTable::Build(tuning->model, kShape, user);
  return tuning;
}

TEST(TrialScheduleTest, TheModelShortlistsMoreThanOneCandidateWhereItIsClose) {
  const DecisionTable table = Base(AllOn())->table;
  ASSERT_GT(table.Trials(), 1);
  // The model's choice is among the trials, and so is another.
  std::set<uint8_t> tried;
  for (int t = 0; t < table.Trials(); ++t) tried.insert(table.ForTrial(t).Choice(kGather));
  EXPECT_TRUE(tried.count(table.Choice(kGather)));
  EXPECT_GT(tried.size(), 1u);
}

// The candidates run in turn, one epoch each, in two rounds.
TEST(TrialScheduleTest, EachCandidateRunsTwoEpochsThenTheMeasuredFastestByItsFasterEpoch) {
  const auto base = Base(AllOn());
  const DecisionTable& table = base->table;
  const int entry = table.EntryOf(kGather);
  // The candidates of kGather's entry in trial order.
  std::vector<uint8_t> candidates;
  for (int t = 0; t < table.Trials(); ++t) candidates.push_back(table.ForTrial(t).Choice(kGather));
  ASSERT_NE(candidates.back(), candidates.front()) << "the test needs a shortlist of two here";
  TrialSchedule trials(base);
  for (int epoch = 0; epoch < kEpochsPerTrial; ++epoch) {
    for (int t = 0; t < table.Trials(); ++t) {
      ASSERT_TRUE(trials.running()) << t;
      EXPECT_EQ(trials.current()->table.Choice(kGather), candidates[t]) << t << "." << epoch;
      // The first candidate: 900 then 300 (a slow first epoch); the last: 400 twice; the
      // others 1000. By the faster epoch, the first candidate wins.
      const bool first = candidates[t] == candidates.front();
      trials.Advance(Measured(entry, first ? (epoch == 0 ? 900 : 300)
                                           : (candidates[t] == candidates.back() ? 400 : 1000)));
    }
  }
  EXPECT_FALSE(trials.running());
  EXPECT_EQ(trials.current()->table.Choice(kGather), candidates.front());
  EXPECT_DOUBLE_EQ(trials.current()->table.ExpectedUs(kGather), 300);
  // Committed: further advances change nothing.
  const std::string committed = trials.current()->table.Describe();
  trials.Advance(Measured(entry, 1));
  EXPECT_EQ(trials.current()->table.Describe(), committed);
}

// A later candidate measured fastest wins over the earlier ones, whatever the model preferred.
TEST(TrialScheduleTest, TheLastCandidateWinsWhenItMeasuresFastest) {
  const auto base = Base(AllOn());
  const int entry = base->table.EntryOf(kGather);
  const uint8_t last = base->table.ForTrial(base->table.Trials() - 1).Choice(kGather);
  TrialSchedule trials(base);
  for (int epoch = 0; trials.running(); ++epoch) {
    // Each trial a tenth faster than the one before: beyond DecisionTable::kLossyMargin.
    trials.Advance(Measured(entry, 1000.0 * std::pow(0.9, epoch)));
  }
  EXPECT_EQ(trials.current()->table.Choice(kGather), last);
}

// hpZ reuses by the call pattern agreed two epochs earlier: its candidates are tried last, even
// where the model ranks them first (a slow link between nodes), and an entry with fewer
// candidates than the trials keeps running its last one.
TEST(TrialScheduleTest, HpzCandidatesAreTriedLast) {
  int hpz_ranked_first_with_others_shortlisted = 0;
  for (double inter_gbps : {0.5, 2.0, 8.0, 40.0}) {
    auto model = CloseCall();
    model.inter.gbps = inter_gbps;
    const DecisionTable table = DecisionTable::Build(model, kShape, AllOn());
    const int entry = table.EntryOf(kGather);
    bool hpz_tried = false, other_tried = false;
    for (int t = 0; t < table.Trials(); ++t) {
      const uint8_t choice = table.ForTrial(t).Choice(kGather);
      if (hpz_tried) {
        EXPECT_TRUE(choice & kHpz) << "trial " << t << " after an hpZ trial, " << inter_gbps;
      }
      hpz_tried = hpz_tried || (choice & kHpz);
      other_tried = other_tried || !(choice & kHpz);
      EXPECT_EQ(table.ForTrial(t).hit_ratios()[entry] > 0, (choice & kHpz) != 0);
    }
    hpz_ranked_first_with_others_shortlisted += (table.Choice(kGather) & kHpz) && other_tried;
  }
  EXPECT_GT(hpz_ranked_first_with_others_shortlisted, 0) << "no model tells the order apart";
}

TEST(TrialScheduleTest, AnEntryNoTrialMeasuredKeepsTheModelsChoice) {
  const auto base = Base(AllOn());
  TrialSchedule trials(base);
  // Steps timed, the last trial's shortest; no call: nothing to tell the tables apart by.
  for (int t = 0; t < kEpochsPerTrial * base->table.Trials(); ++t) {
    TrialEpoch epoch;
    epoch.step_us = 1000.0 - t;
    trials.Advance(epoch);
  }
  ASSERT_FALSE(trials.running());
  EXPECT_EQ(trials.current()->table.Describe(), base->table.Describe());
  EXPECT_EQ(trials.current()->table.ExpectedUs(kGather), 0.0);
  EXPECT_EQ(trials.DescribeSteps(), "not compared: no call measured");
}

TEST(TrialScheduleTest, RanksAgreeOnTheMeanOfTheRanksThatCalled) {
  constexpr size_t kRecord = kTrialRecordValues;
  std::vector<double> all(3 * kRecord);
  all[5] = 10;                  // rank 0
  all[kRecord + 5] = 30;        // rank 1
  all[2 * kRecord + 7] = 4;     // rank 2, another entry; no call of entry 5
  all[kRecord - 1] = 1000;      // rank 0's step
  all[3 * kRecord - 1] = 2000;  // rank 2's; rank 1 timed no whole epoch
  const TrialEpoch agreed = AgreeOnEpoch(all);
  EXPECT_DOUBLE_EQ(agreed.means[5], 20);
  EXPECT_DOUBLE_EQ(agreed.means[7], 4);
  EXPECT_DOUBLE_EQ(agreed.means[6], 0);
  EXPECT_DOUBLE_EQ(agreed.step_us, 1500);
}

// A call's time misses what its codec work costs the rest of the step: where the calls say the
// first candidate and the steps the last, the last candidate's table is committed, expecting what
// its trial measured; no check runs, since the per-call choice is a trial's table.
TEST(TrialScheduleTest, TheStepOverrulesTheCallsWhereTheyDisagree) {
  const auto base = Base(AllOn());
  const int entry = base->table.EntryOf(kGather);
  const int trials_count = base->table.Trials();
  TrialSchedule trials(base);
  for (int epoch = 0; epoch < kEpochsPerTrial; ++epoch) {
    for (int t = 0; t < trials_count; ++t) {
      const bool last = t == trials_count - 1;
      trials.Advance(Measured(entry, last ? 500 : 100 + t, last ? 9000 : 10000));
    }
  }
  ASSERT_FALSE(trials.running());
  const DecisionTable& committed = trials.current()->table;
  EXPECT_EQ(committed.Choice(kGather), base->table.ForTrial(trials_count - 1).Choice(kGather));
  EXPECT_DOUBLE_EQ(committed.ExpectedUs(kGather), 500);
  EXPECT_EQ(trials.DescribeSteps().substr(trials.DescribeSteps().find("->")),
            "-> trial " + std::to_string(trials_count) + "'s table");
}

// Two entries whose calls chose different trials: the per-call choices are no trial's table, so
// they run kEpochsPerTrial epochs of their own, and are committed to only where their step is the
// shortest measured.
TEST(TrialScheduleTest, PerCallChoicesUnlikeEveryTrialAreCheckedByTheirStep) {
  const auto base = Base(AllOn());
  const DecisionTable& table = base->table;
  const int first = table.EntryOf(kGather);
  int second = -1;
  plan::Call other;
  for (uint64_t count = 1; count <= (uint64_t{1} << 26) && second < 0; count *= 2) {
    for (auto op : {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter}) {
      const plan::Call call{
          op, count, ncclFloat32,
          op == plan::CollectiveOp::kAllGather ? plan::Reduction::kNone : plan::Reduction::kSum};
      if (second < 0 && table.EntryOf(call) != first &&
          table.ForTrial(0).Choice(call) != table.ForTrial(1).Choice(call)) {
        second = table.EntryOf(call);
        other = call;
      }
    }
  }
  ASSERT_GE(second, 0) << "the test needs a second entry with a shortlist";
  for (const double checked_step : {8000.0, 12000.0}) {
    TrialSchedule trials(base);
    for (int epoch = 0; epoch < kEpochsPerTrial; ++epoch) {
      for (int t = 0; t < table.Trials(); ++t) {
        TrialEpoch measured = Measured(first, t == 0 ? 100 : 200, 10000);
        measured.means[static_cast<size_t>(second)] = t == 1 ? 100 : 200;
        trials.Advance(measured);
      }
    }
    ASSERT_TRUE(trials.running()) << "the per-call choices' check";
    EXPECT_EQ(trials.current()->table.Choice(kGather), table.ForTrial(0).Choice(kGather));
    EXPECT_EQ(trials.current()->table.Choice(other), table.ForTrial(1).Choice(other));
    for (int epoch = 0; epoch < kEpochsPerTrial; ++epoch) {
      trials.Advance(Measured(first, 1, checked_step));
    }
    ASSERT_FALSE(trials.running());
    const DecisionTable& committed = trials.current()->table;
    const int from = checked_step < 10000 ? 1 : 0;  // 0: trial 1's table, the first shortest
    EXPECT_EQ(committed.Choice(other), table.ForTrial(from).Choice(other)) << checked_step;
    EXPECT_EQ(committed.Choice(kGather), table.ForTrial(0).Choice(kGather)) << checked_step;
  }
}

// kGather's entry measured for its first exact and first lossy candidates (the others far
// slower), per call and per epoch's step (0: not timed), and the trial expected to be committed.
struct MarginCase {
  double exact_us, lossy_us;
  double exact_step, lossy_step;
  bool lossy_committed;
};

void ExpectCommitted(const MarginCase& c) {
  const auto base = Base(AllOn());
  const DecisionTable& table = base->table;
  const int entry = table.EntryOf(kGather);
  int exact = -1, lossy = -1;
  for (int t = 0; t < table.Trials(); ++t) {
    const int lossiness = DecisionTable::Lossiness(table.ForTrial(t).Choice(kGather));
    if (lossiness == 0 && exact < 0) exact = t;
    if (lossiness > 0 && lossy < 0) lossy = t;
  }
  ASSERT_TRUE(exact >= 0 && lossy >= 0) << "the test needs an exact and a lossy candidate";
  TrialSchedule trials(base);
  for (int epoch = 0; trials.running(); ++epoch) {
    const int t = epoch % table.Trials();
    const double us = t == exact ? c.exact_us : t == lossy ? c.lossy_us : 5000;
    const double step = t == exact ? c.exact_step : t == lossy ? c.lossy_step : 20000;
    trials.Advance(Measured(entry, us, c.exact_step > 0 ? step : 0));
  }
  EXPECT_EQ(trials.current()->table.Choice(kGather),
            table.ForTrial(c.lossy_committed ? lossy : exact).Choice(kGather))
      << c.exact_us << " " << c.lossy_us << " " << c.exact_step << " " << c.lossy_step;
}

// No step timed (the calls decide): the lossy candidate is committed only where it measured
// faster by more than kLossyMargin.
TEST(TrialScheduleTest, ALossierCandidateMustBeFasterByTheMargin) {
  ExpectCommitted({1000, 980, 0, 0, false});  // 2% faster
  ExpectCommitted({1000, 960, 0, 0, true});   // 4% faster
}

// The per-call choices stand against a shorter step within kLossyMargin only where they are no
// lossier than that step's table.
TEST(TrialScheduleTest, TheStepMarginKeepsPerCallChoicesThatAreNoLossier) {
  ExpectCommitted({1000, 1100, 10250, 10000, false});  // per-call exact; lossy step 2.4% shorter
  ExpectCommitted({1000, 1100, 10600, 10000, true});   // the lossy step 5.7% shorter
  ExpectCommitted({1000, 500, 10000, 10250, false});   // per-call lossy; the exact step shorter
}

TEST(TrialLogTest, MeansPerEntryAndAFreshStart) {
  TrialLog log;
  const std::vector<float> no_hpz(DecisionTable::kEntries);
  log.Add(3, 10);
  log.Add(3, 30);
  log.Add(9, 5);
  std::vector<double> means = log.TakeMeans(no_hpz);
  EXPECT_DOUBLE_EQ(means[3], 20);
  EXPECT_DOUBLE_EQ(means[9], 5);
  EXPECT_DOUBLE_EQ(means[4], 0);
  means = log.TakeMeans(no_hpz);
  EXPECT_DOUBLE_EQ(means[3], 0);
}

// Fills with no hit yet count the hit each buys, at the model's ratio; with hits, what ran.
TEST(TrialLogTest, HpzFillsWithoutHitsCountTheHitsTheyBuy) {
  using Kind = TrialLog::Kind;
  std::vector<float> ratios(DecisionTable::kEntries);
  ratios[3] = ratios[4] = 0.2f;
  TrialLog log;
  log.Add(3, 100, Kind::kHpzFill);
  log.Add(3, 100, Kind::kHpzFill);
  log.Add(4, 100, Kind::kHpzFill);
  log.Add(4, 10, Kind::kHpzHit);
  const std::vector<double> means = log.TakeMeans(ratios);
  EXPECT_NEAR(means[3], 60, 1e-4);  // (100 + 20) / 2
  EXPECT_DOUBLE_EQ(means[4], 55);   // measured
}

// With qwZ and qgZ's intra stage at 4 bits the tuner may choose 8 (less lossy), never fewer than
// the user's; with the user's 8 it never changes the bits. qgZ's inter stage stays the user's.
TEST(TrialScheduleTest, NeverFewerBitsThanTheUsers) {
  for (int bits : {4, 8}) {
    plan::Settings user = AllOn(bits);
    user.qar = true;  // and the all-reduce's bits
    user.qar_bits = bits;
    const DecisionTable table = Base(user)->table;
    bool wide_gather = false, wide_scatter = false, wide_reduce = false;
    for (int t = 0; t < table.Trials(); ++t) {
      const DecisionTable trial = table.ForTrial(t);
      for (uint64_t count = 1; count <= (uint64_t{1} << 26); count *= 8) {
        for (auto op : {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter,
                        plan::CollectiveOp::kAllReduce}) {
          const plan::Call call{op, count, ncclFloat32,
                                op == plan::CollectiveOp::kAllGather ? plan::Reduction::kNone
                                                                     : plan::Reduction::kSum};
          const plan::Settings s = trial.SettingsFor(call);
          EXPECT_TRUE(s.qwz_bits == bits || s.qwz_bits == 8);
          EXPECT_TRUE(s.qgz_bits_intra == bits || s.qgz_bits_intra == 8);
          EXPECT_TRUE(s.qar_bits == bits || s.qar_bits == 8);
          EXPECT_EQ(s.qgz_bits_inter, user.qgz_bits_inter);
          wide_gather = wide_gather || (s.qwz && s.qwz_bits > bits);
          wide_scatter = wide_scatter || (s.qgz && s.qgz_bits_intra > bits);
          wide_reduce = wide_reduce || (s.qar && s.qar_bits > bits);
        }
      }
    }
    EXPECT_EQ(wide_gather, bits == 4) << bits << " bits";
    EXPECT_EQ(wide_scatter, bits == 4) << bits << " bits";
    EXPECT_EQ(wide_reduce, bits == 4) << bits << " bits";
  }
}

}  // namespace
}  // namespace zpp::tune
