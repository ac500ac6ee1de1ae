#include "bench/zpp_bench/bench_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>

#include "codec/element_io.h"

namespace zpp::bench {

double Epsilon(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat32:
      return std::ldexp(1.0, -24);
    case ncclFloat16:
      return std::ldexp(1.0, -11);
    default:
      return std::ldexp(1.0, -8);
  }
}

std::vector<float> HeldInput(int rank, size_t count, ncclDataType_t dtype) {
  std::mt19937_64 generator(0x5eed0000u + static_cast<uint64_t>(rank));
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(generator);
  std::vector<uint8_t> held(count * NcclTypeBytes(dtype));
  codec::StoreElements(held.data(), dtype, 0, count, values.data());
  codec::LoadElements(held.data(), dtype, 0, count, values.data());
  return values;
}

bool Lossless(const plan::Plan& plan, plan::CollectiveOp op) {
  if (plan.kind == plan::PlanKind::kPassThrough) return true;
  return op == plan::CollectiveOp::kAllGather && plan.bits_inter == 0;
}

size_t InputCount(const CollectiveCase& what, int ranks) {
  return what.op == plan::CollectiveOp::kReduceScatter ? what.count * ranks : what.count;
}

size_t OutputCount(const CollectiveCase& what, int ranks) {
  return what.op == plan::CollectiveOp::kAllGather ? what.count * ranks : what.count;
}

void CompareWithReference(const CollectiveCase& what, int rank, int ranks,
                          const std::function<const std::vector<float>&(int)>& input_of,
                          std::span<const float> got, ErrorStats::Part* part) {
  const size_t count = what.count;
  if (what.op == plan::CollectiveOp::kAllGather) {
    for (int src = 0; src < ranks; ++src) {
      const std::vector<float>& theirs = input_of(src);
      for (size_t i = 0; i < count; ++i) part->Add(got[src * count + i], theirs[i], 0.0);
    }
    return;
  }
  const size_t offset = what.op == plan::CollectiveOp::kReduceScatter ? rank * count : 0;
  std::vector<double> sum(count, 0.0), magnitude(count, 0.0);
  for (int src = 0; src < ranks; ++src) {
    const std::vector<float>& theirs = input_of(src);
    for (size_t i = 0; i < count; ++i) {
      const double x = theirs[offset + i];
      sum[i] += x;
      magnitude[i] += std::abs(x);
    }
  }
  const double eps = Epsilon(what.dtype);
  for (size_t i = 0; i < count; ++i) part->Add(got[i], sum[i], (ranks + 1) * eps * magnitude[i]);
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

Measurement TimedAndCompared(std::vector<double> times_us, const ErrorStats& errors,
                             const plan::Plan& plan, plan::CollectiveOp op) {
  Measurement m;
  m.time_us = Median(std::move(times_us));
  m.rel_l2_err = errors.RelativeL2();
  m.max_abs_err = errors.MaxAbs();
  if (Lossless(plan, op)) m.wrong = errors.Wrong();
  m.plan = std::string(plan::PlanKindName(plan.kind));
  return m;
}

}  // namespace zpp::bench
