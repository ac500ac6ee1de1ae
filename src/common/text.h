// Small string helpers: for parsers (no allocation), and printf-style appending for reports.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace zpp::text {

// Strips spaces, tabs, CR and LF from both ends.
std::string_view Trim(std::string_view s);

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Splits on `sep`, keeping empty pieces ("a,,b" -> {"a", "", "b"}; "" -> {""}).
std::vector<std::string_view> Split(std::string_view s, char sep);

// Appends printf-style text (a line of a report: at most 255 characters per call).
__attribute__((format(printf, 2, 3))) void Appendf(std::string* out, const char* fmt, ...);

}  // namespace zpp::text
