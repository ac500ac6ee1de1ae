#include "log/subsys.h"

#include <array>
#include <cctype>
#include <utility>

#include "common/text.h"

namespace zpp::log {
namespace {

constexpr std::array<std::pair<std::string_view, Subsys>, 12> kSubsysNames = {{
    {"INIT", kInit},
    {"ENV", kEnv},
    {"TOPO", kTopo},
    {"PLAN", kPlan},
    {"EXEC", kExec},
    {"FENCE", kFence},
    {"CODEC", kCodec},
    {"PLUGIN", kPlugin},
    {"STATS", kStats},
    {"BENCH", kBench},
    {"TUNE", kTune},
    {"ALL", kAll},
}};

constexpr std::array<std::string_view, 4> kLevelNames = {"NONE", "WARN", "INFO", "TRACE"};

}  // namespace

std::optional<Level> ParseLevel(std::string_view text) {
  for (size_t i = 0; i < kLevelNames.size(); ++i) {
    if (text::EqualsIgnoreCase(text, kLevelNames[i])) return static_cast<Level>(i);
  }
  return std::nullopt;
}

std::string_view LevelName(Level level) {
  const auto i = static_cast<size_t>(level);
  return i < kLevelNames.size() ? kLevelNames[i] : "?";
}

std::optional<uint32_t> ParseSubsysList(std::string_view text) {
  return ParseSubsysList(text, nullptr);
}

std::optional<uint32_t> ParseSubsysList(std::string_view text, std::vector<std::string>* unknown) {
  text = text::Trim(text);
  bool invert = false;
  if (!text.empty() && text.front() == '^') {
    invert = true;
    text.remove_prefix(1);
  }
  uint32_t mask = 0;
  bool any = false;
  for (std::string_view item : text::Split(text, ',')) {
    item = text::Trim(item);
    bool found = false;
    for (const auto& [name, bit] : kSubsysNames) {
      if (text::EqualsIgnoreCase(item, name)) {
        mask |= bit;
        found = true;
      }
    }
    if (!found) {
      if (unknown == nullptr) return std::nullopt;
      unknown->emplace_back(item);
      continue;
    }
    any = true;
  }
  if (!any) return std::nullopt;
  return invert ? ~mask : mask;
}

std::string_view SubsysName(Subsys one) {
  for (const auto& [name, bit] : kSubsysNames) {
    if (bit == one) return name;
  }
  return "?";
}

}  // namespace zpp::log
