#include "bench/zpp_bench/step_mode.h"

#include <algorithm>

#include "step/mode.h"

namespace zpp::bench {

Result RunStepMode(const StepModeOptions& options,
                   const std::function<void(const step::StepFigures&)>& on_figures,
                   std::vector<step::StepFigures>* out) {
  std::vector<std::string> configs = options.configs;
  if (std::find(configs.begin(), configs.end(), "plain") == configs.end()) {
    configs.insert(configs.begin(), "plain");  // the 3.0 every other figure is relative to
  }
  for (const std::string& name : options.models) {
    step::StepReplaySpec spec;
    ZPP_CHECK(step::ResolveModel(name, &spec.model));
    spec.layout = options.layout;
    spec.steps = options.steps;
    spec.max_elements = options.max_elements;
    spec.buffers = options.buffers;
    spec.micro_batches = options.micro_batches;
    for (const std::string& config : configs) {
      spec.settings = options.base;
      ZPP_CHECK(step::ParseMode(config, &spec.settings));
      step::StepFigures figures;
      ZPP_CHECK(step::ReplaySteps(spec, &figures));
      on_figures(figures);
      out->push_back(figures);
    }
  }
  return ncclSuccess;
}

}  // namespace zpp::bench
