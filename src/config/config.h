// zpp's configuration: every ZPP_* variable parsed once, read through GetConfig().
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zpp {

struct Config {
#define ZPP_ENV_NUM(member, name, kind, def, lo, hi, scope, doc) int64_t member = def;
#define ZPP_ENV_STR(member, name, kind, def, doc) std::string member = def;
#include "config/env_vars.def"
#undef ZPP_ENV_NUM
#undef ZPP_ENV_STR

  // The value of a variable as text, in the form the parser accepts (used by `zpp-env`).
  std::string ValueText(std::string_view name) const;
};

namespace config {

// Returns the raw value of an environment variable, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

struct ParseResult {
  Config config;
  // One line per bad value, naming the variable, the value and what is used instead.
  std::vector<std::string> warnings;
  // The variables whose value was rejected whole (their default is used).
  std::vector<std::string> rejected;
};

// Pure: reads every declared variable through `lookup`. Never throws on bad input.
ParseResult ParseEnvironment(const EnvLookup& lookup);

// The lookup over the process environment.
EnvLookup ProcessEnvironment();

// The text form of a default value, as docs/configuration.md's table shows it.
std::string DefaultText(std::string_view name);

}  // namespace config

// The process-wide configuration, parsed on first use (thread-safe), without a word: a process
// that only has zpp loaded (LD_PRELOAD into every process of a job, torchrun's agent included)
// and never uses it says nothing, at exit neither.
const Config& GetConfig();

// Once per process, where it starts using zpp (its first communicator, engine or CPU comm): the
// WARNs about bad values and unknown ZPP_* names, then at INFO the banner, as NCCL prints its
// own: version, commit, and every setting in force with its source (default, environment,
// rejected, or the flag or preset of zpp-run).
void ReportConfigOnce();

}  // namespace zpp
