// A zpp mode by name, as zpp-bench and step mode spell it: "plain" (the collective as NCCL runs
// it; "nccl" is read as the same), or techniques joined
// by '+': "qwz" or "qwz8" / "qwz4" (weight bits), "hpz", "delta" or "delta4" / "delta2" (qwZ
// deltas, ZPP_QWZ_DELTA; with hpz), "qgz" or "qgz8/4" / "qgz8/2" (intra/inter bits), "ef" (qgZ
// error feedback, ZPP_QGZ_EF). "zero++" is qwz8+hpz+qgz8/4, ZeRO++'s own choice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "log/check.h"
#include "plan/plan.h"

namespace zpp::step {

// Sets the technique fields of `settings` (qwz, qwz_bits, hpz, qwz_delta and its bits, qgz, qgz
// bits, qgz_ef, qar, qar_bits, qar_ef); leaves the rest. "ef" is error feedback for the gradients'
// quantized stage: qgZ's, and the all-reduce's when qar is on.
Result ParseMode(std::string_view name, plan::Settings* settings);

// The canonical name of the techniques `settings` turns on: "plain", "zero++", or the flags
// ("qwz8+hpz", "qgz8/4", ...). ParseMode(ModeName(s)) gives s's techniques back.
std::string ModeName(const plan::Settings& settings);

// Whether the mode changes anything for all-gathers (qwZ, hpZ), reduce-scatters (qgZ) or
// all-reduces (qAR).
bool TouchesAllGather(const plan::Settings& settings);
bool TouchesReduceScatter(const plan::Settings& settings);
bool TouchesAllReduce(const plan::Settings& settings);

// The configurations of the step table (docs/benchmarks.md), plain first.
std::vector<std::string> StandardStepModes();

// The modes that keep state across steps (issue 26: weight deltas, error feedback), which
// zpp-bench's step mode runs after the standard ones. The replay moves the weights by an
// optimizer-sized step when deltas are on (step_replay.cc); its gradients are new every step,
// so feedback shows no gain there (the convergence runs show it).
std::vector<std::string> StatefulStepModes();

}  // namespace zpp::step
