// Builds a message from pieces (text and integers) with one growing string. Chains of
// `"text" + std::string` read worse, and at -O3 trip a false -Wrestrict in GCC 12.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

namespace zpp::topology {
namespace detail {

inline void AppendPiece(std::string& out, std::string_view text) { out += text; }
inline void AppendPiece(std::string& out, char c) { out += c; }
template <std::integral T>
requires(!std::same_as<T, char> && !std::same_as<T, bool>) void AppendPiece(std::string& out,
                                                                            T value) {
  out += std::to_string(value);
}

}  // namespace detail

template <typename... Pieces>
std::string StrCat(const Pieces&... pieces) {
  std::string out;
  (detail::AppendPiece(out, pieces), ...);
  return out;
}

}  // namespace zpp::topology
