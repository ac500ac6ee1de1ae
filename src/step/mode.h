// A zpp mode by name, as zpp-bench and step mode spell it: "plain" (the collective as NCCL runs
// it; "nccl" is read as the same), or techniques joined
// by '+': "qwz" or "qwz8" / "qwz4" (weight bits), "hpz", "qgz" or "qgz8/4" (intra/inter bits).
// "zero++" is qwz8+hpz+qgz8/4, ZeRO++'s own choice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "plan/plan.h"

namespace zpp::step {

// Sets the technique fields of `settings` (qwz, qwz_bits, hpz, qgz, qgz bits); leaves the rest.
Result ParseMode(std::string_view name, plan::Settings* settings);

// The canonical name of the techniques `settings` turns on: "plain", "zero++", or the flags
// ("qwz8+hpz", "qgz8/4", ...). ParseMode(ModeName(s)) gives s's techniques back.
std::string ModeName(const plan::Settings& settings);

// Whether the mode changes anything for all-gathers (qwZ, hpZ) or reduce-scatters (qgZ).
bool TouchesAllGather(const plan::Settings& settings);
bool TouchesReduceScatter(const plan::Settings& settings);

// The configurations of the README's step table, plain first.
std::vector<std::string> StandardStepModes();

}  // namespace zpp::step
