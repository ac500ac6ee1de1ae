#include "tune/decision_table.h"

#include <bit>
#include <cstdio>

#include "plan/planner.h"

namespace zpp::tune {
namespace {

constexpr ncclDataType_t kDtypes[3] = {ncclFloat32, ncclFloat16, ncclBfloat16};

plan::Settings Masked(const plan::Settings& user, uint8_t mask) {
  plan::Settings s = user;
  s.qwz = user.qwz && (mask & kQwz);
  s.hpz = user.hpz && (mask & kHpz);
  s.qgz = user.qgz && (mask & kQgz);
  return s;
}

uint8_t Enabled(const plan::Settings& user, plan::CollectiveOp op) {
  if (op == plan::CollectiveOp::kReduceScatter) return user.qgz ? kQgz : 0;
  return static_cast<uint8_t>((user.qwz ? kQwz : 0) | (user.hpz ? kHpz : 0));
}

std::string MaskName(uint8_t mask) {
  if (mask == 0) return "nccl";
  std::string name;
  for (auto [bit, text] : {std::pair{kQwz, "qwz"}, {kHpz, "hpz"}, {kQgz, "qgz"}}) {
    if (!(mask & bit)) continue;
    if (!name.empty()) name += "+";
    name += text;
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
  for (int op = 0; op < 2; ++op) {
    const auto collective =
        op == 0 ? plan::CollectiveOp::kAllGather : plan::CollectiveOp::kReduceScatter;
    const uint8_t enabled = Enabled(user, collective);
    for (int d = 0; d < 3; ++d) {
      const uint64_t element = plan::DtypeBytes(kDtypes[d]);
      for (int band = 0; band < kBands; ++band) {
        // The band's middle, in elements per rank.
        const double bytes = 1.5 * static_cast<double>(uint64_t{1} << band);
        const auto count = static_cast<uint64_t>(
            bytes / static_cast<double>(element * static_cast<uint64_t>(shape.world)));
        const plan::Call call{collective, count < 1 ? 1 : count, kDtypes[d],
                              op == 0 ? plan::Reduction::kNone : plan::Reduction::kSum};
        uint8_t best = 0;
        double best_us = ModelledMicroseconds(model, shape, Masked(any_size, 0), call);
        // Every subset of the enabled techniques, fewest first: a tie keeps the less lossy one.
        for (uint8_t mask = 1; mask <= enabled; ++mask) {
          if ((mask & enabled) != mask) continue;
          const double us = ModelledMicroseconds(model, shape, Masked(any_size, mask), call);
          if (us < best_us) {
            best_us = us;
            best = mask;
          }
        }
        table.choice_[op][d][band] = best;
      }
    }
  }
  return table;
}

uint8_t DecisionTable::Choice(const plan::Call& call) const {
  const uint64_t bytes = call.count * plan::DtypeBytes(call.dtype) * static_cast<uint64_t>(world_);
  const int op = call.op == plan::CollectiveOp::kAllGather ? 0 : 1;
  return choice_[op][DtypeIndex(call.dtype)][BandOf(bytes)];
}

plan::Settings DecisionTable::SettingsFor(const plan::Call& call) const {
  return Masked(user_, Choice(call));
}

std::string DecisionTable::Describe() const {
  std::string out;
  const char* ops[2] = {"all-gather", "reduce-scatter"};
  const char* dtypes[3] = {"fp32", "fp16", "bf16"};
  for (int op = 0; op < 2; ++op) {
    for (int d = 0; d < 3; ++d) {
      if (!out.empty()) out.append("; ");
      out.append(ops[op]).append(" ").append(dtypes[d]).append(":");
      for (int band = 0; band < kBands; ++band) {
        if (band > 0 && choice_[op][d][band] == choice_[op][d][band - 1]) continue;
        out.append(" ").append(BytesText(uint64_t{1} << band)).append("+ ");
        out.append(MaskName(choice_[op][d][band]));
      }
    }
  }
  return out;
}

}  // namespace zpp::tune
