// Untrusted text (a garbled file, another rank's bytes) made safe for one log line.
#pragma once

#include <string>
#include <string_view>

namespace zpp::topology {

// At most `max_chars` characters, each not printable ASCII replaced by '?', and "..." when cut.
std::string Printable(std::string_view text, size_t max_chars = 80);

}  // namespace zpp::topology
