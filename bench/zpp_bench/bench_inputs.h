// What every runner shares: each rank's input (Gaussian, as the dtype holds it, the same on
// every backend for the same rank and size), the dtype's rounding, and which plans are lossless.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <vector>

#include "plan/plan.h"

namespace zpp::bench {

// Unit roundoff of the dtype the output is held in.
double Epsilon(ncclDataType_t dtype);

// Rank `rank`'s input, Gaussian, as the dtype holds it.
std::vector<float> HeldInput(int rank, size_t count, ncclDataType_t dtype);

// Plans whose output must match the reference: pass-through, unquantized all-gathers.
bool Lossless(const plan::Plan& plan, plan::CollectiveOp op);

}  // namespace zpp::bench
