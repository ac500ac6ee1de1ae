// Logging in NCCL's manner: gated by level and subsystem before any formatting, one line per
// call in NCCL's format ("host:pid:tid [rank] ZPP INFO ..."; WARN lines carry file:line).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "log/subsys.h"

namespace zpp::log {

struct Settings {
  Level level = Level::kWarn;
  uint32_t subsys_mask = kAll;
  std::string file_pattern;  // empty: stderr; %h host name, %p pid
};

namespace detail {
// -1 until configured; then the Level as an int.
extern std::atomic<int> g_level;
extern std::atomic<uint32_t> g_mask;
// Configures the logger from the process's settings (it calls Configure). The settings come from
// the environment, which only the config layer parses: config/config.cc installs its own when it
// loads, so that logging never calls into the layer above it.
using Configurer = void (*)();
void SetConfigurer(Configurer configurer);
// At the first line: the installed configurer's level, or WARN's while none is installed.
int ConfigureOnFirstUse();
}  // namespace detail

// True when a line at this level and subsystem would be written. WARN ignores the mask.
inline bool Enabled(Level level, uint32_t subsys) {
  int current = detail::g_level.load(std::memory_order_acquire);
  if (current < 0) current = detail::ConfigureOnFirstUse();
  if (static_cast<int>(level) > current || level == Level::kNone) return false;
  return level == Level::kWarn || (subsys & detail::g_mask.load(std::memory_order_relaxed)) != 0;
}

// Writes one line; call only through the macros, which check Enabled() first.
void Emit(Level level, uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Replaces the settings (the process configuration calls this once; tests call it directly).
void Configure(const Settings& settings);

// Expands %h (host name) and %p (pid) as NCCL_DEBUG_FILE does.
std::string ExpandFilePattern(std::string_view pattern);

// Tests: every line goes to `sink` instead of the file; nullptr restores the file.
void SetSinkForTesting(std::function<void(std::string_view line)> sink);

// The rank printed in this thread's lines while the scope lives.
class ScopedRank {
 public:
  explicit ScopedRank(int rank);
  ~ScopedRank();
  ScopedRank(const ScopedRank&) = delete;
  ScopedRank& operator=(const ScopedRank&) = delete;

 private:
  int previous_;
};

}  // namespace zpp::log

#define ZPP_LOG(level, subsys, fmt, ...)                                                   \
  do {                                                                                     \
    if (::zpp::log::Enabled(level, subsys))                                                \
      ::zpp::log::Emit(level, subsys, __FILE__, __LINE__, fmt __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

#define ZPP_WARN(fmt, ...) \
  ZPP_LOG(::zpp::log::Level::kWarn, ::zpp::log::kAll, fmt __VA_OPT__(, ) __VA_ARGS__)
#define ZPP_INFO(subsys, fmt, ...) \
  ZPP_LOG(::zpp::log::Level::kInfo, ::zpp::log::subsys, fmt __VA_OPT__(, ) __VA_ARGS__)
#define ZPP_TRACE(subsys, fmt, ...) \
  ZPP_LOG(::zpp::log::Level::kTrace, ::zpp::log::subsys, fmt __VA_OPT__(, ) __VA_ARGS__)
