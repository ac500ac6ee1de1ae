// The declaration table of zpp's environment variables (generated from env_vars.def).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/enum_names.h"

namespace zpp::config {

// Each kind and its name in the docs' table and in a WARN.
#define ZPP_ENV_KINDS(X)                                                                        \
  X(kBool, "bool")                    /* 0/1, true/false, yes/no, on/off (any case) */          \
  X(kInt, "integer")                  /* decimal integer within [min, max] */                   \
  X(kBits, "bit width")               /* 2, 3, 4 or 8 within [min, max] */                      \
  X(kPow2, "power of two")            /* power of two within [min, max] */                      \
  X(kBytes, "bytes (K, M, G suffix)") /* optional K, M or G (powers of 1024), in [min, max] */  \
  X(kLevel, "level")                  /* NONE, WARN, INFO, TRACE (any case), stored 0..3 */     \
  X(kTune, "off or auto")             /* OFF or AUTO (any case), stored 0 or 1 */               \
  X(kSubsys, "subsystem list")    /* comma-separated subsystems, ^ negates, stored as a mask */ \
  X(kPath, "path")                /* any text; whether it opens is checked where it is used */  \
  X(kToken, "token")              /* [A-Za-z0-9._:-]{1,64} */                                   \
  X(kFilePattern, "file pattern") /* any text; %h and %p are substituted where it is used */
enum class Kind { ZPP_ENV_KINDS(ZPP_ENUMERATOR) };

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
