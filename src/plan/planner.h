// The planner: a pure function from a call and the agreed state to a plan. Cheap (no
// allocation), so it runs on every intercepted call.
#pragma once

#include "plan/plan.h"

namespace zpp {
struct Config;
}

namespace zpp::plan {

Plan MakePlan(const Call& call, const Shape& shape, const Settings& settings, const HpzState& hpz);

// The elements of an all-reduce of `count` that each of `world` ranks owns in a hierarchical
// plan: count / world rounded up to whole 32-element runs (the last shares are padded with
// zeros). Whole runs, because a rotated piece whose tail block ends in a partial run mixes
// rotated values (scaled by 1/32, format.h) with unrotated ones under one scale, and the rotated
// ones then lose most of their bits.
uint64_t AllReduceShare(uint64_t count, int world);

// The planner's view of the configuration.
Settings SettingsFrom(const Config& config);

}  // namespace zpp::plan
