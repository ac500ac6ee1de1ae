// Small string helpers for parsers (no allocation).
#pragma once

#include <string_view>
#include <vector>

namespace zpp::text {

// Strips spaces, tabs, CR and LF from both ends.
std::string_view Trim(std::string_view s);

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Splits on `sep`, keeping empty pieces ("a,,b" -> {"a", "", "b"}; "" -> {""}).
std::vector<std::string_view> Split(std::string_view s, char sep);

}  // namespace zpp::text
