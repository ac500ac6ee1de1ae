#include "config/env_names.h"

#include <algorithm>
#include <array>

#include "config/env_spec.h"

extern char** environ;

namespace zpp::config {

namespace {

constexpr std::array kOtherVariables = {
    OtherVariable{"ZPP_LAUNCH_RANK", "zpp-launch: this rank"},
    OtherVariable{"ZPP_LAUNCH_SIZE", "zpp-launch: the number of ranks"},
    OtherVariable{"ZPP_LAUNCH_BOOTSTRAP", "zpp-launch: the ranks' rendezvous address"},
    OtherVariable{"ZPP_BENCH_MODES", "tools/gpu-bench.sh: the modes to run"},
    OtherVariable{"ZPP_BENCH_NAME", "tools/gpu-bench.sh: the results' name"},
    OtherVariable{"ZPP_BENCH_MPS", "tools/gpu-bench.sh: 1 runs the ranks under an MPS daemon"},
    OtherVariable{"ZPP_RESULTS", "tools/gpu-check.sh: where results go"},
    OtherVariable{"ZPP_CHECK_LOGS", "tools/gpu-check.sh: a folder that keeps every log"},
    OtherVariable{"ZPP_CHECK_NCCL", "tools/gpu-check.sh: the libnccl.so.2 to test against"},
    OtherVariable{"ZPP_CHECK_MODES", "tools/gpu-check.sh: the plugin modes to run"},
    OtherVariable{"ZPP_CHECK_RANK_TIMEOUT", "tools/gpu-check.sh: seconds one rank may run"},
    OtherVariable{"ZPP_CHECK_MPS", "tools/gpu-check.sh: 1 runs the ranks under an MPS daemon"},
    OtherVariable{"ZPP_CHECK_SANITIZER_TIMEOUT",
                  "tools/gpu-check.sh: seconds one rank may run under compute-sanitizer"},
    OtherVariable{"ZPP_CORPUS_DIR",
                  "bench/fsdp/gpt_text.py: the training text (default: Debian's fortunes)"},
    OtherVariable{"ZPP_TORCH_PYTHON", "make test: the pinned torch's python"},
    OtherVariable{"ZPP_VENV", "tools/install-torch.sh: the torch virtual environment"},
    OtherVariable{"ZPP_LINT_VENV",
                  "tools/install-lint.sh: the static-analysis tools' virtual environment"},
    OtherVariable{"ZPP_BUILD_DIR", "tools scripts: the build folder"},
    OtherVariable{"ZPP_TORCH_CPU",
                  "zpp-run --cpu: torch's gloo process groups run on the zpp backend"},
    OtherVariable{"ZPP_RUN_SETTINGS",
                  "zpp-run: where each setting it passed came from, for zpp's banner"},
};

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions
// of neighbours, one edit each.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::span<const OtherVariable> OtherVariables() { return kOtherVariables; }

bool IsKnownName(std::string_view name) {
  if (FindEnvSpec(name) != nullptr) return true;
  return std::any_of(kOtherVariables.begin(), kOtherVariables.end(),
                     [name](const OtherVariable& other) { return other.name == name; });
}

std::string ClosestKnownName(std::string_view name) {
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, name.size() / 4) + 1;
  const auto consider = [&](std::string_view known) {
    const size_t distance = EditDistance(name, known);
    if (distance < best_distance) {
      best_distance = distance;
      best = known;
    }
  };
  for (const EnvSpec& spec : AllEnvSpecs()) consider(spec.name);
  for (const OtherVariable& other : kOtherVariables) consider(other.name);
  return std::string(best);
}

std::vector<std::string> UnknownNameWarnings(const std::vector<std::string>& names) {
  std::vector<std::string> warnings;
  for (const std::string& name : names) {
    if (!name.starts_with("ZPP_") || IsKnownName(name)) continue;
    const std::string closest = ClosestKnownName(name);
    warnings.push_back(name + " is not a variable zpp knows: it is ignored" +
                       (closest.empty() ? std::string(" (zpp-env lists them)")
                                        : " (did you mean " + closest + "?)"));
  }
  return warnings;
}

std::vector<std::string> ProcessZppNames() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (!text.starts_with("ZPP_")) continue;
    names.emplace_back(text.substr(0, text.find('=')));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace zpp::config
