// The declaration table of zpp's environment variables (generated from env_vars.def).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace zpp::config {

enum class Kind {
  kBool,         // 0/1, true/false, yes/no, on/off (any case)
  kInt,          // decimal integer within [min, max]
  kBits,         // 2, 3, 4 or 8 within [min, max]
  kPow2,         // power of two within [min, max]
  kBytes,        // integer with an optional K, M or G suffix (powers of 1024), within [min, max]
  kLevel,        // NONE, WARN, INFO, TRACE (any case), stored 0..3
  kTune,         // OFF or AUTO (any case), stored 0 or 1
  kSubsys,       // comma-separated subsystem names, ^ prefix negates, stored as a mask
  kPath,         // any text; whether it can be opened is checked where it is used
  kToken,        // [A-Za-z0-9._:-]{1,64}
  kFilePattern,  // any text; %h and %p are substituted where it is used
};

// env_vars.def's Scope column.
enum class Scope {
  kAgreed,  // every rank of a communicator must share it (engine/config_agreement.cc)
  kLocal,   // each rank's own
};

struct EnvSpec {
  std::string_view name;
  Kind kind;
  bool is_string;  // stored as std::string, not int64_t
  int64_t default_num;
  std::string_view default_str;
  int64_t min;
  int64_t max;
  Scope scope;
  std::string_view doc;
};

// All variables, in declaration order.
std::span<const EnvSpec> AllEnvSpecs();

// The spec of one variable, or nullptr.
const EnvSpec* FindEnvSpec(std::string_view name);

// What a value of this kind may be, for humans ("bit width", "power of two").
std::string_view KindName(Kind kind);

// The widths a kBits variable takes within its range, joined by `last` before the last one:
// "4 or 8", "2, 3, 4 or 8" (last " or "); "4, 8" (last ", ").
std::string BitWidths(const EnvSpec& spec, std::string_view last);

}  // namespace zpp::config
