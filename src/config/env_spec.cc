#include "config/env_spec.h"

#include <array>
#include <vector>

namespace zpp::config {
namespace {

constexpr EnvSpec kSpecs[] = {
#define ZPP_ENV_NUM(member, name, kind, def, lo, hi, scope, doc) \
  {name, Kind::k##kind, false, def, "", lo, hi, Scope::k##scope, doc},
#define ZPP_ENV_STR(member, name, kind, def, doc) \
  {name, Kind::k##kind, true, 0, def, 0, 0, Scope::kLocal, doc},
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

std::string BitWidths(const EnvSpec& spec, std::string_view last) {
  std::vector<std::string> widths;
  for (int64_t bits : {2, 3, 4, 8}) {  // format.h's widths (zppBitsValid)
    if (bits >= spec.min && bits <= spec.max) widths.push_back(std::to_string(bits));
  }
  std::string text;
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i > 0) text += i + 1 == widths.size() ? std::string(last) : ", ";
    text += widths[i];
  }
  return text;
}

std::string_view KindName(Kind kind) {
  static constexpr std::string_view kNames[] = {ZPP_ENV_KINDS(ZPP_ENUM_NAME)};
  return NameIn(kNames, kind, "?");
}

}  // namespace zpp::config
