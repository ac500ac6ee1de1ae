#include "config/config.h"

#include <mutex>

#include "config/env_names.h"
#include "log/log.h"

namespace zpp {

const Config& GetConfig() {
  static std::once_flag once;
  static Config config;
  std::call_once(once, [] {
    config::ParseResult parsed = config::ParseEnvironment(config::ProcessEnvironment());
    config = std::move(parsed.config);
    // The logger takes its settings from the configuration, so the warnings about bad values
    // can only be printed once it is set up.
    log::ConfigureFrom(config);
    for (const std::string& warning : parsed.warnings) ZPP_WARN("%s", warning.c_str());
    for (const std::string& warning : config::UnknownNameWarnings(config::ProcessZppNames())) {
      ZPP_WARN("%s", warning.c_str());
    }
  });
  return config;
}

}  // namespace zpp
