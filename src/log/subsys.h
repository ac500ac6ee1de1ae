// Log levels and subsystems: names and masks, shared by the logger and the config parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zpp::log {

enum class Level : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

enum Subsys : uint32_t {
  kInit = 1u << 0,
  kEnv = 1u << 1,
  kTopo = 1u << 2,
  kPlan = 1u << 3,
  kExec = 1u << 4,
  kFence = 1u << 5,
  kCodec = 1u << 6,
  kPlugin = 1u << 7,
  kStats = 1u << 8,
  kBench = 1u << 9,
  kTune = 1u << 10,
  kAll = 0xffffffffu,
};

// NONE, WARN, INFO, TRACE (case-insensitive).
std::optional<Level> ParseLevel(std::string_view text);
std::string_view LevelName(Level level);

// "INIT,TOPO" or "^FENCE" (NCCL's syntax). nullopt if a name is unknown or the list is empty.
std::optional<uint32_t> ParseSubsysList(std::string_view text);
// The same, keeping the names it knows: the unknown ones go to *unknown instead of failing the
// whole list (nullopt only when no name is known).
std::optional<uint32_t> ParseSubsysList(std::string_view text, std::vector<std::string>* unknown);
// The canonical text of a mask ("ALL" or "INIT,TOPO").
std::string_view SubsysName(Subsys one);

}  // namespace zpp::log
