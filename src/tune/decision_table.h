// ZPP_TUNE=auto's decision: for each collective, dtype and size band (powers of two of the whole
// gathered or scattered buffer, as ZPP_MIN_BYTES measures it), which of the techniques the user
// turned on a call runs with, the empty choice being NCCL. Built once at communicator set-up
// from the cost model (costmodel/cost_model.h) with the figures every rank agreed on
// (tune/calibration.h): every input is identical on all ranks, so every rank decides alike
// (contract 3), and a call costs one table look-up.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "costmodel/cost_model.h"
#include "plan/plan.h"

namespace zpp::tune {

// One bit per technique.
enum Technique : uint8_t { kQwz = 1, kHpz = 2, kQgz = 4 };

class DecisionTable {
 public:
  // The fastest by `model` of NCCL and the subsets of `user`'s techniques, per band. hpZ's
  // gather is counted as the fill it is in the forward pass and the hit it buys in the backward:
  // (fill + hit) / 2 per call, one backward hit per forward fill as FSDP and ZeRO-3 gather.
  static DecisionTable Build(const costmodel::ClusterModel& model, const plan::Shape& shape,
                             const plan::Settings& user);

  // The techniques `call` runs with (a subset of the user's; 0: NCCL).
  uint8_t Choice(const plan::Call& call) const;
  // The user's settings with the techniques the table left out turned off.
  plan::Settings SettingsFor(const plan::Call& call) const;
  // For the log: per collective and dtype, the bands where the choice changes.
  std::string Describe() const;

  static constexpr int kBands = 48;  // whole buffers of 1 byte to 256 TiB
  static int BandOf(uint64_t bytes);

 private:
  static int DtypeIndex(ncclDataType_t dtype);
  plan::Settings user_;
  int world_ = 1;
  // [op][dtype][band]
  std::array<std::array<std::array<uint8_t, kBands>, 3>, 2> choice_{};
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
