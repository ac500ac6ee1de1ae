#include "config/env_doc.h"

#include "config/config.h"
#include "config/env_spec.h"

namespace zpp::config {
namespace {

std::string Allowed(const EnvSpec& spec) {
  switch (spec.kind) {
    case Kind::kBool:
      return "0/1, true/false, yes/no, on/off";
    case Kind::kBits:
      return BitWidths(spec, ", ");
    case Kind::kLevel:
      return "NONE, WARN, INFO, TRACE";
    case Kind::kTune:
      return "off, auto";
    case Kind::kSubsys:
      return "see meaning";
    case Kind::kToken:
      return "[A-Za-z0-9._:-], 1 to 64 characters";
    case Kind::kPath:
    case Kind::kFilePattern:
      return "any path";
    case Kind::kInt:
    case Kind::kBytes:
      return std::to_string(spec.min) + " to " + std::to_string(spec.max);
    case Kind::kPow2:
      return "powers of two, " + std::to_string(spec.min) + " to " + std::to_string(spec.max);
  }
  return "";
}

}  // namespace

std::string EnvMarkdownTable() {
  std::string out =
      "| variable | type | default | allowed | every rank | meaning |\n"
      "|---|---|---|---|---|---|\n";
  for (const EnvSpec& spec : AllEnvSpecs()) {
    std::string def = DefaultText(spec.name);
    if (def.empty()) def = "(unset)";
    out += "| `" + std::string(spec.name) + "` | " + std::string(KindName(spec.kind)) + " | `" +
           def + "` | " + Allowed(spec) + " | " + (spec.scope == Scope::kAgreed ? "same" : "") +
           " | " + std::string(spec.doc) + " |\n";
  }
  return out;
}

}  // namespace zpp::config
