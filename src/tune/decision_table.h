// ZPP_TUNE=auto's decision: for each collective, dtype and size band (powers of two of the whole
// gathered, scattered or reduced buffer, as ZPP_MIN_BYTES measures it), which of the techniques
// the user
// turned on a call runs with, the empty choice being NCCL. Built at communicator set-up from the
// cost model (costmodel/cost_model.h) with the figures every rank agreed on (tune/calibration.h),
// which also keeps, per entry, a shortlist of the candidates the model cannot rule out; the
// trials (tune/trial_schedule.h) then run each for two steps and commit to what they measured
// fastest. Every input is identical on all ranks, so every rank decides alike (contract 3), and a
// call costs one table look-up.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"
#include "plan/plan.h"

namespace zpp::tune {

// One bit per technique; kWide: qwZ, qgZ's intra-node stage and the all-reduce's inter-node
// stage at 8 bits where the user asked for fewer (never lossier than the user's setting, which is
// the lossiest the tuner may choose).
enum Technique : uint8_t { kQwz = 1, kHpz = 2, kQgz = 4, kWide = 8, kQar = 16 };

class DecisionTable {
 public:
  // The fastest by `model` of NCCL and the subsets of `user`'s techniques, per band, and the
  // shortlist: the candidates the model puts within kShortlistFactor of it, fastest first (at most
  // kMaxTrials). hpZ's gather is counted as the fill it is in the forward pass and the hit it buys
  // in the backward: (fill + hit) / 2 per call, one backward hit per forward fill as FSDP and
  // ZeRO-3 gather.
  static DecisionTable Build(const costmodel::ClusterModel& model, const plan::Shape& shape,
                             const plan::Settings& user);

  // The trials' steps: the longest shortlist.
  int Trials() const;
  // The table of trial `t`: each entry its t-th candidate, or its last when it has fewer. The
  // candidates with hpZ come last in each round (kept from when hpZ's reuse followed a pattern
  // agreed two epochs earlier; since issue 44 it pairs within the epoch, and the order costs
  // nothing).
  DecisionTable ForTrial(int t) const;
  // Per entry, a hit's time over a fill's by the model for the candidate the table runs (0: not
  // hpZ): what a trial without hits (no backward gathers in it) expects of the hits it would buy.
  std::span<const float> hit_ratios() const { return hit_ratio_now_; }
  // The table the trials measured fastest: `means[t][entry]` is the agreed mean wall time of a
  // call of the entry under ForTrial(t) (0: no call), and a measured entry keeps that time as
  // what it expects (ExpectedUs); among candidates within kLossyMargin of the fastest, the least
  // lossy (Lossiness), then the fastest. Entries no trial measured keep the model's choice.
  DecisionTable Committed(const std::vector<std::vector<double>>& means) const;
  // The table of trial `t` for good (its step measured shortest), each entry expecting what that
  // trial measured of it.
  DecisionTable CommittedToTrial(int t, const std::vector<std::vector<double>>& means) const;
  // Whether `other` chooses as this table does at every entry some trial measured.
  bool SameWhereMeasured(const DecisionTable& other,
                         const std::vector<std::vector<double>>& means) const;
  // Whether this table's choice is no lossier than `other`'s at every entry some trial measured.
  bool NoLossierWhereMeasured(const DecisionTable& other,
                              const std::vector<std::vector<double>>& means) const;
  // The committed measurement of `call`'s entry (microseconds; 0: none).
  double ExpectedUs(const plan::Call& call) const;
  // For the log: each measured entry's candidates with their times, and the choice.
  std::string DescribeTrials(const std::vector<std::vector<double>>& means) const;

  // The techniques `call` runs with (a subset of the user's; 0: NCCL).
  uint8_t Choice(const plan::Call& call) const;
  // The user's settings with the techniques the table left out turned off.
  plan::Settings SettingsFor(const plan::Call& call) const;
  // For the log: per collective and dtype, the bands where the choice changes.
  std::string Describe() const;

  static constexpr int kBands = 48;                   // whole buffers of 1 byte to 256 TiB
  static constexpr int kOps = 3;                      // all-gather, reduce-scatter, all-reduce
  static constexpr int kEntries = kOps * 3 * kBands;  // op x dtype x band
  static constexpr int kMaxTrials = 3;
  // The model is a prior, not the truth (on CPU ranks it misses the transport's CPU time and the
  // wait for late peers): a candidate it puts within this factor of the best is tried.
  static constexpr double kShortlistFactor = 3.0;
  // A lossier choice is taken only where it measured faster by more than this fraction: within
  // it, the difference is the machine's noise, and a quantization error would buy nothing.
  static constexpr double kLossyMargin = 0.03;
  // 0: exact (NCCL, hpZ); 1: quantized at 8 bits where the user asked for fewer (kWide); 2: at
  // the user's bits.
  static int Lossiness(uint8_t choice);
  static int BandOf(uint64_t bytes);
  // The entry (op x dtype x band) of `call`.
  int EntryOf(const plan::Call& call) const;

 private:
  static int DtypeIndex(ncclDataType_t dtype);
  plan::Settings user_;
  int world_ = 1;
  std::array<uint8_t, kEntries> choice_{};
  std::array<std::array<uint8_t, kMaxTrials>, kEntries> shortlist_{};
  std::array<uint8_t, kEntries> shortlisted_{};  // how many candidates
  std::array<std::array<float, kMaxTrials>, kEntries> hit_ratio_{};
  std::array<float, kEntries> hit_ratio_now_{};
  std::array<float, kEntries> expected_us_{};
};

// What ZPP_TUNE=auto decides with: the figures the ranks agreed on, and the table built from them.
struct Tuning {
  costmodel::ClusterModel model;
  DecisionTable table;
};

// The model's time for a call of `count` elements per rank under `settings`, hpZ's fill and
// hit averaged as Build counts them (microseconds).
double ModelledMicroseconds(const costmodel::ClusterModel& model, const plan::Shape& shape,
                            const plan::Settings& settings, const plan::Call& call);

}  // namespace zpp::tune
