// Whether a collective's smaller buffer and its larger one overlap other than in NCCL's in-place
// layout (the smaller at this rank's place in the larger): then a plan may write the output
// before it has read all of the input, so the input is staged. All-gather: small = the input,
// large = the output; reduce-scatter: small = the output, large = the input.
#pragma once

#include <cstddef>

namespace zpp {

inline bool OverlapsNotInPlace(const void* small, size_t small_bytes, const void* large,
                               size_t large_bytes, size_t in_place_offset) {
  const auto* s = static_cast<const std::byte*>(small);
  const auto* l = static_cast<const std::byte*>(large);
  if (s == l + in_place_offset) return false;
  return s < l + large_bytes && l < s + small_bytes;
}

}  // namespace zpp
