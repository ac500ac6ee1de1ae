// qgZ's error budget against an fp64 reference, from the mode's settings and the cluster's shape
// alone, never from the plan under test: a plan that quantizes at the wrong bits, or once too
// often, must not widen its own budget.
#pragma once

#include <nccl.h>

#include <cmath>
#include <vector>

#include "plan/plan.h"

namespace zpp::test {

// Relative L2 error of one int8 / int4 block quantization (block 256, round to nearest even) of
// Gaussian data against fp64: 0.697% and 12.64% (zpp-codec-sweep, docs/codecs.md's block table).
inline double LevelError(int bits) { return bits == 8 ? 0.00697 : 0.1264; }

// The quantizations the partial sums of a reduce-scatter pass through under `settings` on
// `shape`: the flat plan one at the inter bits; the hierarchical one at the intra bits, then
// the node sums at the inter bits; the three-level one the rack sums at the inter bits again.
inline std::vector<int> QgzLevels(const plan::Settings& settings, const plan::Shape& shape) {
  if (!settings.qgz) return {};
  if (shape.hierarchical_allowed && shape.rack_level_allowed) {
    return {settings.qgz_bits_intra, settings.qgz_bits_inter, settings.qgz_bits_inter};
  }
  if (shape.hierarchical_allowed) return {settings.qgz_bits_intra, settings.qgz_bits_inter};
  return {settings.qgz_bits_inter};
}

// Independent roundings of sums of Gaussian terms add in quadrature: measured 12.7% for 8/4
// hierarchical (model 12.66%) and 17.9% three-level (model 17.89%), see qgz_levels_test.cc.
inline double QgzModelError(const plan::Settings& settings, const plan::Shape& shape) {
  double squares = 0;
  for (int bits : QgzLevels(settings, shape)) squares += LevelError(bits) * LevelError(bits);
  return std::sqrt(squares);
}

inline double HalfUlpRelative(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat16:
      return std::ldexp(1.0, -11);
    case ncclBfloat16:
      return std::ldexp(1.0, -8);
    default:
      return std::ldexp(1.0, -24);
  }
}

// 1.2 x the model, plus the output's rounding (twice: inputs and output in the dtype) and fp32
// accumulation; plain reduce-scatters get the rounding alone.
inline double QgzBudget(const plan::Settings& settings, const plan::Shape& shape,
                        ncclDataType_t dtype) {
  return 1.2 * QgzModelError(settings, shape) + 2 * HalfUlpRelative(dtype) + 1e-5;
}

}  // namespace zpp::test
