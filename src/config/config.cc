#include "config/config.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "config/env_names.h"
#include "config/env_spec.h"
#include "log/log.h"
#include "zpp/zpp.h"

#ifndef ZPP_COMMIT
#define ZPP_COMMIT "unknown"
#endif

namespace zpp {
namespace {

// What the first GetConfig parsed, kept for ReportConfigOnce.
// Never destroyed, as the configuration: the reports at exit read them after the function
// statics made later than themselves are gone.
config::ParseResult& Parsed() {
  static auto* parsed = new config::ParseResult();
  return *parsed;
}

// Where each variable zpp-run passed came from (ZPP_RUN_SETTINGS: "NAME=source;...").
std::string RunSource(std::string_view name) {
  const char* settings = std::getenv("ZPP_RUN_SETTINGS");
  if (settings == nullptr) return "";
  const std::string_view all(settings);
  const std::string key = std::string(name) + "=";
  for (size_t start = 0; start < all.size();) {
    size_t end = all.find(';', start);
    if (end == std::string_view::npos) end = all.size();
    const std::string_view entry = all.substr(start, end - start);
    if (entry.starts_with(key)) return std::string(entry.substr(key.size()));
    start = end + 1;
  }
  return "";
}

std::string SourceOf(std::string_view name, const config::ParseResult& parsed) {
  const char* raw = std::getenv(std::string(name).c_str());
  if (raw == nullptr || *raw == '\0') return "default";
  if (std::find(parsed.rejected.begin(), parsed.rejected.end(), name) != parsed.rejected.end()) {
    return "rejected, default used";
  }
  const std::string run = RunSource(name);
  return run.empty() ? "environment" : "zpp-run: " + run;
}

}  // namespace

const Config& GetConfig() {
  static std::once_flag once;
  static auto* config = new Config();
  std::call_once(once, [] {
    Parsed() = config::ParseEnvironment(config::ProcessEnvironment());
    *config = Parsed().config;
    log::Settings settings;
    settings.level = static_cast<log::Level>(config->debug);
    settings.subsys_mask = static_cast<uint32_t>(config->debug_subsys);
    settings.file_pattern = config->debug_file;
    log::Configure(settings);
  });
  return *config;
}

namespace {

// The logger's first line reads the settings through here (log/log.h), installed when this file
// loads: GetConfig configures the logger as a side effect.
const bool kLoggerConfigurer = [] {
  log::detail::SetConfigurer([] { GetConfig(); });
  return true;
}();

}  // namespace

void ReportConfigOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const Config& config = GetConfig();
    const config::ParseResult& parsed = Parsed();
    for (const std::string& warning : parsed.warnings) ZPP_WARN("%s", warning.c_str());
    for (const std::string& warning : config::UnknownNameWarnings(config::ProcessZppNames())) {
      ZPP_WARN("%s", warning.c_str());
    }
    if (!log::Enabled(log::Level::kInfo, log::kInit)) return;
    ZPP_INFO(kInit, "zpp %d.%d.%d (built from commit %s); settings in force:", ZPP_MAJOR, ZPP_MINOR,
             ZPP_PATCH, ZPP_COMMIT);
    for (const config::EnvSpec& spec : config::AllEnvSpecs()) {
      const std::string value = config.ValueText(spec.name);
      ZPP_INFO(kInit, "  %.*s=%s (%s)", static_cast<int>(spec.name.size()), spec.name.data(),
               value.empty() ? "(unset)" : value.c_str(), SourceOf(spec.name, parsed).c_str());
    }
  });
}

}  // namespace zpp
