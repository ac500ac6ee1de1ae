#include "topology/printable.h"

namespace zpp::topology {

std::string Printable(std::string_view text, size_t max_chars) {
  std::string out;
  for (char c : text.substr(0, max_chars)) out += (c >= ' ' && c <= '~') ? c : '?';
  if (text.size() > max_chars) out += "...";
  return out;
}

}  // namespace zpp::topology
