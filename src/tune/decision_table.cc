#include "tune/decision_table.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "kernels/math/codec_params.h"
#include "plan/planner.h"

namespace zpp::tune {
namespace {

constexpr ncclDataType_t kDtypes[3] = {ncclFloat32, ncclFloat16, ncclBfloat16};
constexpr plan::CollectiveOp kCollectives[DecisionTable::kOps] = {
    plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter,
    plan::CollectiveOp::kAllReduce};
constexpr const char* kOpNames[DecisionTable::kOps] = {"all-gather", "reduce-scatter",
                                                       "all-reduce"};

plan::Settings Masked(const plan::Settings& user, uint8_t mask) {
  plan::Settings s = user;
  s.qwz = user.qwz && (mask & kQwz);
  s.hpz = user.hpz && (mask & kHpz);
  s.qgz = user.qgz && (mask & kQgz);
  s.qar = user.qar && (mask & kQar);
  if (s.qwz && (mask & kWide)) {
    // ZeRO++'s own weight format: far finer than any format of fewer bits at blocks of 32 or
    // more (an 8-bit step is 1/127 of the block's largest value, a 4-bit one 1/7), rotated or not.
    s.qwz_bits = 8;
    s.qwz_rotate = false;
    s.block = std::max(s.block, codec::kDefaultBlock);
  }
  // The intra-node stage only: the block is the inter-node stage's too, and stays the user's.
  if (s.qgz && (mask & kWide)) s.qgz_bits_intra = 8;
  if (s.qar && (mask & kWide)) s.qar_bits = 8;  // int8: ZPP_QAR's default, unrotated
  return s;
}

// The candidates of `op` under `user`, in the order a tie keeps: NCCL, then fewer techniques
// first, and each choice at 8 bits before the user's fewer (the less lossy first): qwZ's bits,
// and qgZ's intra-node stage (ZeRO++'s own 8/4 where the user asked 4/4).
std::vector<uint8_t> Candidates(const plan::Settings& user, plan::CollectiveOp op) {
  uint8_t enabled = 0;
  switch (op) {
    case plan::CollectiveOp::kAllGather:
      enabled = static_cast<uint8_t>((user.qwz ? kQwz : 0) | (user.hpz ? kHpz : 0));
      break;
    case plan::CollectiveOp::kReduceScatter:
      enabled = user.qgz ? kQgz : 0;
      break;
    case plan::CollectiveOp::kAllReduce:
      enabled = user.qar ? kQar : 0;
      break;
  }
  std::vector<uint8_t> out{0};
  for (uint8_t mask = 1; mask <= enabled; ++mask) {
    if ((mask & enabled) != mask) continue;
    const bool narrow = (mask & kQwz)   ? user.qwz_bits < 8
                        : (mask & kQgz) ? user.qgz_bits_intra < 8
                                        : (mask & kQar) && user.qar_bits < 8;
    if (narrow) out.push_back(mask | kWide);
    out.push_back(mask);
  }
  return out;
}

std::string MaskName(uint8_t mask, const plan::Settings& user) {
  if ((mask & ~kWide) == 0) return "nccl";
  std::string name;
  for (auto [bit, text] : {std::pair{kQwz, "qwz"}, {kHpz, "hpz"}, {kQgz, "qgz"}, {kQar, "qar"}}) {
    if (!(mask & bit)) continue;
    if (!name.empty()) name += "+";
    name += text;
    if (bit == kQwz && user.qwz_bits < 8) {
      name += (mask & kWide) ? "8" : std::to_string(user.qwz_bits);
    }
    if (bit == kQgz && user.qgz_bits_intra < 8) {
      name += ((mask & kWide) ? "8/" : std::to_string(user.qgz_bits_intra) + "/") +
              std::to_string(user.qgz_bits_inter);
    }
    if (bit == kQar) name += (mask & kWide) ? "8" : std::to_string(user.qar_bits);
  }
  return name;
}

std::string BytesText(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%lluG", static_cast<unsigned long long>(bytes >> 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%lluM", static_cast<unsigned long long>(bytes >> 20));
  } else if (bytes >= 1024) {
    std::snprintf(text, sizeof(text), "%lluK", static_cast<unsigned long long>(bytes >> 10));
  } else {
    std::snprintf(text, sizeof(text), "%llu", static_cast<unsigned long long>(bytes));
  }
  return text;
}

}  // namespace

double ModelledMicroseconds(const costmodel::ClusterModel& model, const plan::Shape& shape,
                            const plan::Settings& settings, const plan::Call& call) {
  const plan::Plan planned = plan::MakePlan(call, shape, settings, plan::HpzState{});
  const double time = costmodel::TimeOf(planned, call, model).total_us();
  if (planned.kind != plan::PlanKind::kHierarchicalAllGather) return time;
  const plan::Plan hit = plan::MakePlan(call, shape, settings, plan::HpzState{true});
  return (time + costmodel::TimeOf(hit, call, model).total_us()) / 2;
}

namespace {

// Whether any trial measured a call of `entry`.
bool MeasuredAt(const std::vector<std::vector<double>>& means, int entry) {
  return std::any_of(means.begin(), means.end(), [entry](const auto& t) { return t[entry] > 0; });
}

// A hit's modelled time over its fill's, for a plan that fills hpZ's partition (0: none).
float HitOverFill(const costmodel::ClusterModel& model, const plan::Shape& shape,
                  const plan::Settings& settings, const plan::Call& call) {
  const plan::Plan fill = plan::MakePlan(call, shape, settings, plan::HpzState{});
  if (fill.kind != plan::PlanKind::kHierarchicalAllGather || !settings.hpz) return 0;
  const plan::Plan hit = plan::MakePlan(call, shape, settings, plan::HpzState{true});
  const double fill_us = costmodel::TimeOf(fill, call, model).total_us();
  return fill_us > 0 ? static_cast<float>(costmodel::TimeOf(hit, call, model).total_us() / fill_us)
                     : 0;
}

}  // namespace

int DecisionTable::BandOf(uint64_t bytes) {
  if (bytes == 0) return 0;
  const int band = std::bit_width(bytes) - 1;
  return band < kBands ? band : kBands - 1;
}

int DecisionTable::DtypeIndex(ncclDataType_t dtype) {
  return dtype == ncclFloat32 ? 0 : dtype == ncclFloat16 ? 1 : 2;
}

DecisionTable DecisionTable::Build(const costmodel::ClusterModel& model, const plan::Shape& shape,
                                   const plan::Settings& user) {
  DecisionTable table;
  table.user_ = user;
  table.world_ = shape.world;
  plan::Settings any_size = user;
  any_size.min_bytes = 0;  // ZPP_MIN_BYTES is applied before the table, as a floor
  for (int op = 0; op < kOps; ++op) {
    const plan::CollectiveOp collective = kCollectives[op];
    const bool all_reduce = collective == plan::CollectiveOp::kAllReduce;
    const std::vector<uint8_t> candidates = Candidates(user, collective);
    for (int d = 0; d < 3; ++d) {
      const uint64_t element = plan::DtypeBytes(kDtypes[d]);
      for (int band = 0; band < kBands; ++band) {
        // The band's middle, in elements per rank (an all-reduce's: the whole buffer).
        const double bytes = 1.5 * static_cast<double>(uint64_t{1} << band);
        const uint64_t ranks = all_reduce ? 1 : static_cast<uint64_t>(shape.world);
        const auto count = static_cast<uint64_t>(bytes / static_cast<double>(element * ranks));
        const plan::Call call{collective, count < 1 ? 1 : count, kDtypes[d],
                              op == 0 ? plan::Reduction::kNone : plan::Reduction::kSum};
        std::vector<std::pair<double, uint8_t>> ranked;
        for (uint8_t mask : candidates) {
          ranked.emplace_back(ModelledMicroseconds(model, shape, Masked(any_size, mask), call),
                              mask);
        }
        // Fastest first; a tie keeps the order of Candidates (the less lossy first).
        std::stable_sort(ranked.begin(), ranked.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        const int entry = (op * 3 + d) * kBands + band;
        std::vector<uint8_t> shortlist;
        for (const auto& [us, mask] : ranked) {
          if (static_cast<int>(shortlist.size()) == kMaxTrials ||
              us > kShortlistFactor * ranked.front().first) {
            break;
          }
          shortlist.push_back(mask);
        }
        // hpZ last, the model's order kept within each group.
        std::stable_partition(shortlist.begin(), shortlist.end(),
                              [](uint8_t mask) { return !(mask & kHpz); });
        for (size_t t = 0; t < shortlist.size(); ++t) {
          table.shortlist_[entry][t] = shortlist[t];
          table.hit_ratio_[entry][t] =
              HitOverFill(model, shape, Masked(any_size, shortlist[t]), call);
        }
        table.shortlisted_[entry] = static_cast<uint8_t>(shortlist.size());
        table.choice_[entry] = ranked.front().second;
      }
    }
  }
  return table;
}

int DecisionTable::EntryOf(const plan::Call& call) const {
  const bool all_reduce = call.op == plan::CollectiveOp::kAllReduce;
  const uint64_t bytes =
      call.count * plan::DtypeBytes(call.dtype) * (all_reduce ? 1 : static_cast<uint64_t>(world_));
  const int op =
      static_cast<int>(std::find(kCollectives, kCollectives + kOps, call.op) - kCollectives);
  return (op * 3 + DtypeIndex(call.dtype)) * kBands + BandOf(bytes);
}

uint8_t DecisionTable::Choice(const plan::Call& call) const { return choice_[EntryOf(call)]; }

int DecisionTable::Trials() const {
  return *std::max_element(shortlisted_.begin(), shortlisted_.end());
}

DecisionTable DecisionTable::ForTrial(int t) const {
  DecisionTable table = *this;
  for (int e = 0; e < kEntries; ++e) {
    const int slot = t < shortlisted_[e] ? t : shortlisted_[e] - 1;
    table.choice_[e] = shortlist_[e][slot];
    table.hit_ratio_now_[e] = hit_ratio_[e][slot];
    table.expected_us_[e] = 0;
  }
  return table;
}

int DecisionTable::Lossiness(uint8_t choice) {
  if ((choice & (kQwz | kQgz | kQar)) == 0) return 0;
  return (choice & kWide) != 0 ? 1 : 2;
}

DecisionTable DecisionTable::Committed(const std::vector<std::vector<double>>& means) const {
  DecisionTable table = *this;  // the model's choice where no trial measured
  table.hit_ratio_now_ = {};
  for (int e = 0; e < kEntries; ++e) {
    const int tried = std::min(static_cast<int>(shortlisted_[e]), static_cast<int>(means.size()));
    double fastest = 0;
    for (int t = 0; t < tried; ++t) {
      const double us = means[t][e];
      if (us > 0 && (fastest == 0 || us < fastest)) fastest = us;
    }
    int pick = -1;
    for (int t = 0; t < tried; ++t) {
      const double us = means[t][e];
      if (!(us > 0) || us > fastest * (1 + kLossyMargin)) continue;
      const int lossiness = Lossiness(shortlist_[e][t]);
      const int picked = pick < 0 ? 0 : Lossiness(shortlist_[e][pick]);
      if (pick < 0 || lossiness < picked || (lossiness == picked && us < means[pick][e])) pick = t;
    }
    if (pick >= 0) table.choice_[e] = shortlist_[e][pick];
    table.expected_us_[e] = pick >= 0 ? static_cast<float>(means[pick][e]) : 0.0f;
  }
  return table;
}

DecisionTable DecisionTable::CommittedToTrial(int t,
                                              const std::vector<std::vector<double>>& means) const {
  DecisionTable table = *this;  // the model's choice where no trial measured
  table.hit_ratio_now_ = {};
  const DecisionTable trial = ForTrial(t);
  for (int e = 0; e < kEntries; ++e) {
    if (!MeasuredAt(means, e)) continue;
    table.choice_[e] = trial.choice_[e];
    table.expected_us_[e] = static_cast<float>(means.at(static_cast<size_t>(t))[e]);
  }
  return table;
}

bool DecisionTable::SameWhereMeasured(const DecisionTable& other,
                                      const std::vector<std::vector<double>>& means) const {
  for (int e = 0; e < kEntries; ++e) {
    if (MeasuredAt(means, e) && choice_[e] != other.choice_[e]) return false;
  }
  return true;
}

bool DecisionTable::NoLossierWhereMeasured(const DecisionTable& other,
                                           const std::vector<std::vector<double>>& means) const {
  for (int e = 0; e < kEntries; ++e) {
    if (MeasuredAt(means, e) && Lossiness(choice_[e]) > Lossiness(other.choice_[e])) return false;
  }
  return true;
}

double DecisionTable::ExpectedUs(const plan::Call& call) const {
  return expected_us_[EntryOf(call)];
}

plan::Settings DecisionTable::SettingsFor(const plan::Call& call) const {
  return Masked(user_, Choice(call));
}

std::string DecisionTable::DescribeTrials(const std::vector<std::vector<double>>& means) const {
  std::string out;
  for (int e = 0; e < kEntries; ++e) {
    const int tried = std::min<int>(shortlisted_[e], static_cast<int>(means.size()));
    bool measured = false;
    for (int t = 0; t < tried; ++t) measured = measured || means[t][e] > 0;
    if (!measured) continue;
    const int op = e / (3 * kBands), d = (e / kBands) % 3, band = e % kBands;
    if (!out.empty()) out.append("; ");
    out.append(kOpNames[op]).append(" ").append(plan::DtypeName(kDtypes[d])).append(" ");
    out.append(BytesText(uint64_t{1} << band)).append("+:");
    char text[32];
    for (int t = 0; t < tried; ++t) {
      if (!(means[t][e] > 0)) continue;
      std::snprintf(text, sizeof(text), " %.2f ms", means[t][e] / 1000);
      out.append(" ").append(MaskName(shortlist_[e][t], user_)).append(text);
    }
    out.append(" -> ").append(MaskName(choice_[e], user_));
  }
  return out.empty() ? "no call measured" : out;
}

std::string DecisionTable::Describe() const {
  std::string out;
  for (int op = 0; op < kOps; ++op) {
    for (int d = 0; d < 3; ++d) {
      if (!out.empty()) out.append("; ");
      out.append(kOpNames[op]).append(" ").append(plan::DtypeName(kDtypes[d])).append(":");
      for (int band = 0; band < kBands; ++band) {
        const int e = (op * 3 + d) * kBands + band;
        if (band > 0 && choice_[e] == choice_[e - 1]) continue;
        out.append(" ").append(BytesText(uint64_t{1} << band)).append("+ ");
        out.append(MaskName(choice_[e], user_));
      }
    }
  }
  return out;
}

}  // namespace zpp::tune
