#include "config/env_spec.h"

#include <array>

namespace zpp::config {
namespace {

constexpr EnvSpec kSpecs[] = {
#define ZPP_ENV_NUM(member, name, kind, def, lo, hi, doc) \
  {name, Kind::k##kind, false, def, "", lo, hi, doc},
#define ZPP_ENV_STR(member, name, kind, def, doc) {name, Kind::k##kind, true, 0, def, 0, 0, doc},
#include "config/env_vars.def"
#undef ZPP_ENV_NUM
#undef ZPP_ENV_STR
};

}  // namespace

std::span<const EnvSpec> AllEnvSpecs() { return kSpecs; }

const EnvSpec* FindEnvSpec(std::string_view name) {
  for (const EnvSpec& spec : kSpecs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "integer";
    case Kind::kBits:
      return "4 or 8";
    case Kind::kPow2:
      return "power of two";
    case Kind::kBytes:
      return "bytes (K, M, G suffix)";
    case Kind::kLevel:
      return "level";
    case Kind::kTune:
      return "off or auto";
    case Kind::kSubsys:
      return "subsystem list";
    case Kind::kPath:
      return "path";
    case Kind::kToken:
      return "token";
    case Kind::kFilePattern:
      return "file pattern";
  }
  return "?";
}

}  // namespace zpp::config
