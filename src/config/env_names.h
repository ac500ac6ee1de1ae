// Which ZPP_* names zpp knows, and the typo check over the ones a process was given (issue 29):
// a misspelt variable (ZPP_QZW=1, ZPP_QWZ_BIT=4) would otherwise be ignored without a word and
// the job would train uncompressed.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zpp::config {

// ZPP_* variables that are not zpp's configuration but that its own tools set or read, so that
// they are never taken for typos: what zpp-launch gives its ranks, the GPU scripts' and the
// test runner's settings.
struct OtherVariable {
  std::string_view name;
  std::string_view meaning;
};
std::span<const OtherVariable> OtherVariables();

// Whether `name` is a configuration variable (env_vars.def) or one of OtherVariables().
bool IsKnownName(std::string_view name);

// The known name closest to `name` by edit distance (a transposition counts one edit), or ""
// when none is within a quarter of its length (at least 2 edits).
std::string ClosestKnownName(std::string_view name);

// One line for each ZPP_* name in `names` that zpp does not know, with the closest known name.
std::vector<std::string> UnknownNameWarnings(const std::vector<std::string>& names);

// The names of this process's environment variables that start with ZPP_.
std::vector<std::string> ProcessZppNames();

}  // namespace zpp::config
