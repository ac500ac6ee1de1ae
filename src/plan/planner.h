// The planner: a pure function from a call and the agreed state to a plan. Cheap (no
// allocation), so it runs on every intercepted call.
#pragma once

#include "plan/plan.h"

namespace zpp {
struct Config;
}

namespace zpp::plan {

Plan MakePlan(const Call& call, const Shape& shape, const Settings& settings, const HpzState& hpz);

// The planner's view of the configuration.
Settings SettingsFrom(const Config& config);

}  // namespace zpp::plan
