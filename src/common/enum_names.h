// An enum and the names of its values, written once. A list macro LIST(X) calls
// X(enumerator, "name") for each value, in order; the enum is
// `enum class E { LIST(ZPP_ENUMERATOR) };` (values 0, 1, ...) and its names
// `constexpr std::string_view kNames[] = {LIST(ZPP_ENUM_NAME)};`, so no value can lack a name.
// docs/architecture.md, "Layers" (src/common).
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>

#define ZPP_ENUMERATOR(value, name) value,
#define ZPP_ENUM_NAME(value, name) name,

namespace zpp {

// An enum's value as its underlying integer; an integer as itself.
template <typename Value>
constexpr auto AsInteger(Value value) {
  if constexpr (std::is_enum_v<Value>) {
    return static_cast<std::underlying_type_t<Value>>(value);
  } else {
    return value;
  }
}

// names[value], or `unknown` for a value outside the list (a C caller's integer).
template <typename Value, size_t N>
constexpr std::string_view NameIn(const std::string_view (&names)[N], Value value,
                                  std::string_view unknown) {
  const auto index = AsInteger(value);
  return std::in_range<size_t>(index) && static_cast<size_t>(index) < N ? names[index] : unknown;
}

// For values that are not 0, 1, ... or not zpp's (NCCL's enums, the C API's): a table of rows.
template <typename Value>
using NamedValue = std::pair<Value, std::string_view>;

// The name beside `value` in `table`, or `unknown`.
template <typename Value, size_t N>
constexpr std::string_view NameIn(const NamedValue<Value> (&table)[N], Value value,
                                  std::string_view unknown) {
  for (const auto& [key, name] : table) {
    if (key == value) return name;
  }
  return unknown;
}

// Whether `table` names each of 0 .. count-1 exactly once: a static_assert's check that a C
// enumeration with a count (ncclNumResults, zppNumReasons) has every value named.
template <typename Value, size_t N>
constexpr bool NamesEachOnce(const NamedValue<Value> (&table)[N], int count) {
  if (static_cast<int>(N) != count) return false;
  for (int value = 0; value < count; ++value) {
    int seen = 0;
    for (const auto& row : table) seen += static_cast<int>(AsInteger(row.first)) == value;
    if (seen != 1) return false;
  }
  return true;
}

}  // namespace zpp
