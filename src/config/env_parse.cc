// Parsing of ZPP_* values. Pure and total: any byte string gives a value within the declared
// range, and a bad one gives one warning naming the variable, the value and the default.
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "common/text.h"
#include "config/config.h"
#include "config/env_spec.h"
#include "config/rack_token.h"
#include "log/check.h"
#include "log/subsys.h"
#include "zpp/format.h"

namespace zpp::config {
namespace {

constexpr size_t kMaxPathLength = 4096;

struct Binding {
  std::string_view name;
  int64_t Config::*num;
  std::string Config::*str;
};

constexpr Binding kBindings[] = {
#define ZPP_ENV_NUM(member, name, kind, def, lo, hi, scope, doc) {name, &Config::member, nullptr},
#define ZPP_ENV_STR(member, name, kind, def, doc) {name, nullptr, &Config::member},
#include "config/env_vars.def"
#undef ZPP_ENV_NUM
#undef ZPP_ENV_STR
};

// The value as it may appear in a log line: at most 64 characters, control bytes escaped.
std::string Printable(std::string_view raw) {
  std::string out;
  const size_t limit = 64;
  for (size_t i = 0; i < raw.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (raw.size() > limit) out += "...";
  return out;
}

std::optional<int64_t> ParseInt(std::string_view s, std::string* why) {
  int64_t value = 0;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (first != last && *first == '+') ++first;  // from_chars rejects a leading '+'
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) {
    *why = "does not fit in a 64-bit integer";
    return std::nullopt;
  }
  if (ec != std::errc() || ptr != last || first == last) {
    *why = "is not an integer";
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> ParseBytes(std::string_view s, std::string* why) {
  int shift = 0;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift != 0) s.remove_suffix(1);
  }
  const std::optional<int64_t> base = ParseInt(s, why);
  if (!base) {
    if (shift != 0 || *why == "is not an integer") *why = "is not a byte count (like 4096 or 64K)";
    return std::nullopt;
  }
  if (*base > (std::numeric_limits<int64_t>::max() >> shift) ||
      *base < (std::numeric_limits<int64_t>::min() >> shift)) {
    *why = "does not fit in a 64-bit integer";
    return std::nullopt;
  }
  return *base * (int64_t{1} << shift);
}

std::optional<int64_t> ParseNumber(const EnvSpec& spec, std::string_view s, std::string* why) {
  std::optional<int64_t> value;
  switch (spec.kind) {
    case Kind::kBool:
      for (std::string_view yes : {"1", "true", "yes", "on"}) {
        if (text::EqualsIgnoreCase(s, yes)) return 1;
      }
      for (std::string_view no : {"0", "false", "no", "off"}) {
        if (text::EqualsIgnoreCase(s, no)) return 0;
      }
      *why = "is not a boolean (0/1, true/false, yes/no, on/off)";
      return std::nullopt;
    case Kind::kLevel:
      if (auto level = log::ParseLevel(s)) return static_cast<int64_t>(*level);
      *why = "is not a level (NONE, WARN, INFO, TRACE)";
      return std::nullopt;
    case Kind::kTune:
      if (text::EqualsIgnoreCase(s, "off")) return 0;
      if (text::EqualsIgnoreCase(s, "auto")) return 1;
      *why = "is not off or auto";
      return std::nullopt;
    case Kind::kSubsys:
      if (auto mask = log::ParseSubsysList(s)) return *mask == log::kAll ? -1 : int64_t{*mask};
      *why = "names an unknown subsystem";
      return std::nullopt;
    case Kind::kBytes:
      value = ParseBytes(s, why);
      break;
    case Kind::kInt:
    case Kind::kBits:
    case Kind::kPow2:
      value = ParseInt(s, why);
      break;
    case Kind::kPath:
    case Kind::kToken:
    case Kind::kFilePattern:
      *why = "is of a kind zpp cannot parse as a number" ZPP_BUG_REPORT;
      return std::nullopt;
  }
  if (!value) return std::nullopt;
  if (spec.kind == Kind::kBits &&
      (!zppBitsValid(static_cast<int>(*value)) || *value < spec.min || *value > spec.max)) {
    *why = "is not " + BitWidths(spec, " or ");
    return std::nullopt;
  }
  if (*value < spec.min || *value > spec.max) {
    *why = "is out of range [" + std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]";
    return std::nullopt;
  }
  if (spec.kind == Kind::kPow2 && (*value & (*value - 1)) != 0) {
    *why = "is not a power of two";
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> ParseString(const EnvSpec& spec, std::string_view s, std::string* why) {
  if (spec.kind == Kind::kToken) {
    // The one kind of token zpp reads is a rack id; topology owns what one may look like.
    const std::string_view problem = RackTokenProblem(s);
    if (!problem.empty()) {
      *why = std::string(problem);
      return std::nullopt;
    }
  } else if (s.size() >= kMaxPathLength) {
    *why = "is longer than 4095 characters";
    return std::nullopt;
  } else if (s.find('\0') != std::string_view::npos) {
    *why = "holds a NUL byte";
    return std::nullopt;
  }
  return std::string(s);
}

}  // namespace

std::string DefaultText(std::string_view name) { return Config{}.ValueText(name); }

ParseResult ParseEnvironment(const EnvLookup& lookup) {
  ParseResult result;
  const Config defaults;
  for (const Binding& binding : kBindings) {
    const EnvSpec& spec = *FindEnvSpec(binding.name);
    const std::optional<std::string> raw = lookup(spec.name);
    if (!raw) continue;
    const std::string_view value = text::Trim(*raw);
    if (value.empty()) continue;  // set but blank counts as unset, as NCCL treats ""
    std::string why;
    bool ok = false;
    std::vector<std::string> unknown;
    const std::optional<uint32_t> subsystems =
        spec.kind == Kind::kSubsys ? log::ParseSubsysList(value, &unknown) : std::nullopt;
    if (subsystems && !unknown.empty()) {
      // One misspelt name does not cost the user the subsystems they named right.
      result.config.*binding.num = *subsystems == log::kAll ? -1 : int64_t{*subsystems};
      std::string names;
      for (const std::string& name : unknown)
        names += (names.empty() ? "\"" : ", \"") + name + "\"";
      result.warnings.push_back(std::string(spec.name) + "=\"" + Printable(*raw) +
                                "\" names unknown subsystem(s) " + names + "; using " +
                                result.config.ValueText(spec.name));
      continue;
    }
    if (spec.is_string) {
      if (auto parsed = ParseString(spec, value, &why)) {
        result.config.*binding.str = std::move(*parsed);
        ok = true;
      }
    } else if (auto parsed = ParseNumber(spec, value, &why)) {
      result.config.*binding.num = *parsed;
      ok = true;
    }
    if (!ok) {
      std::string shown = defaults.ValueText(spec.name);
      if (shown.empty()) shown = "(unset)";
      result.warnings.push_back(std::string(spec.name) + "=\"" + Printable(*raw) + "\" " + why +
                                "; using the default " + shown);
      result.rejected.emplace_back(spec.name);
    }
  }
  return result;
}

EnvLookup ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

}  // namespace zpp::config

namespace zpp {

std::string Config::ValueText(std::string_view name) const {
  for (const config::Binding& binding : config::kBindings) {
    if (binding.name != name) continue;
    if (binding.str != nullptr) return this->*binding.str;
    const int64_t value = this->*binding.num;
    const config::EnvSpec& spec = *config::FindEnvSpec(name);
    if (spec.kind == config::Kind::kLevel) {
      return std::string(log::LevelName(static_cast<log::Level>(value)));
    }
    if (spec.kind == config::Kind::kTune) return value != 0 ? "auto" : "off";
    if (spec.kind == config::Kind::kSubsys) {
      if (value == -1) return "ALL";
      std::string names;
      for (uint32_t bit = 1; bit <= log::kTune; bit <<= 1) {
        if ((static_cast<uint32_t>(value) & bit) == 0) continue;
        if (!names.empty()) names += ',';
        names += log::SubsysName(static_cast<log::Subsys>(bit));
      }
      return names;
    }
    return std::to_string(value);
  }
  return "";
}

}  // namespace zpp
