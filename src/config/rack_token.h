// What a rack id may look like: the same alphabet as ZPP_RACK_ID, so that a rack named in a
// file, by SLURM or in the environment prints, compares and fits in a RankRecord the same way.
#pragma once

#include <cstddef>
#include <string_view>

namespace zpp::config {

inline constexpr size_t kMaxRackTokenLength = 64;

// [A-Za-z0-9._:-]{1,64}
bool IsValidRackToken(std::string_view token);

// Why `token` is not valid, for a WARN line ("is empty", "is longer than 64 characters", ...).
std::string_view RackTokenProblem(std::string_view token);

}  // namespace zpp::config
