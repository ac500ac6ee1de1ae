// What every runner shares: each rank's input (Gaussian, as the dtype holds it, the same on
// every backend for the same rank and size), the dtype's rounding, and which plans are lossless.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "bench/zpp_bench/bench_types.h"
#include "bench/zpp_bench/error_stats.h"
#include "plan/plan.h"

namespace zpp::bench {

// Unit roundoff of the dtype the output is held in.
double Epsilon(ncclDataType_t dtype);

// Rank `rank`'s input, Gaussian, as the dtype holds it.
std::vector<float> HeldInput(int rank, size_t count, ncclDataType_t dtype);

// Plans whose output must match the reference: pass-through, unquantized all-gathers.
bool Lossless(const plan::Plan& plan, plan::CollectiveOp op);

// Elements one rank sends and receives in a call of `what` among `ranks` ranks.
size_t InputCount(const CollectiveCase& what, int ranks);
size_t OutputCount(const CollectiveCase& what, int ranks);

// Rank `rank`'s output `got` of one call of `what`, added to `part` against the fp64 reference
// made from every rank's input (`input_of(src)`: HeldInput of that rank). A lossless all-gather
// must match it exactly; a lossless reduction within the rounding a sum of n values in the dtype
// makes (a reduce-scatter's output is piece `rank` of the sum, an all-reduce's all of it).
void CompareWithReference(const CollectiveCase& what, int rank, int ranks,
                          const std::function<const std::vector<float>&(int)>& input_of,
                          std::span<const float> got, ErrorStats::Part* part);

// The median (0 for none).
double Median(std::vector<double> values);

// A case's timing and error columns: the median of `times_us`, the error against the reference,
// the elements wrong only where `plan` is lossless, and the plan's name.
Measurement TimedAndCompared(std::vector<double> times_us, const ErrorStats& errors,
                             const plan::Plan& plan, plan::CollectiveOp op);

}  // namespace zpp::bench
