// A BatchMap as the kernels read it: the divisions that split an item into its digits become a
// multiply-high and a shift by magic numbers found once on the host (Granlund and Montgomery's
// round-up method), so placing an item costs a few instructions instead of two 32-bit
// divisions. Exact for every 32-bit item index and divisor (tests/codec/batch_test.cc checks it
// against BatchMap::Place); the host side builds it in the launchers.
#pragma once

#include <cstdint>

#include "kernels/math/codec_params.h"
#include "kernels/math/hd.h"

namespace zpp::codec {

struct FastDivide {
  uint32_t divisor = 1;
  uint32_t multiplier = 1;
  uint32_t shift = 0;

  // The magic numbers of `divisor` (>= 1): shift = ceil(log2 divisor), multiplier =
  // floor(2^32 (2^shift - divisor) / divisor) + 1.
  static FastDivide Of(uint32_t divisor) {
    FastDivide f;
    f.divisor = divisor;
    while (f.shift < 32 && (uint64_t{1} << f.shift) < divisor) ++f.shift;
    f.multiplier = static_cast<uint32_t>(
        ((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - divisor)) / divisor + 1);
    return f;
  }

  ZPP_HD uint32_t Quotient(uint32_t n) const {
    const uint64_t high = (static_cast<uint64_t>(n) * multiplier) >> 32;
    return static_cast<uint32_t>((high + n) >> shift);
  }
};

struct BatchPlaces {
  uint32_t items = 1;     // at most 2^32 - 1 (the batch checks)
  FastDivide by_fastest;  // radix[2]
  FastDivide by_middle;   // radix[1]
  uint64_t from[BatchMap::kDigits] = {0, 0, 0};
  uint64_t to[BatchMap::kDigits] = {0, 0, 0};

  static BatchPlaces Of(const BatchMap& map) {
    BatchPlaces places;
    places.items = static_cast<uint32_t>(map.items());
    places.by_fastest = FastDivide::Of(map.radix[2]);
    places.by_middle = FastDivide::Of(map.radix[1]);
    for (int k = 0; k < BatchMap::kDigits; ++k) {
      places.from[k] = map.from[k];
      places.to[k] = map.to[k];
    }
    return places;
  }

  // BatchMap::Place, for item < 2^32.
  ZPP_HD void Place(uint32_t item, uint64_t* from_offset, uint64_t* to_offset) const {
    const uint32_t rest = by_fastest.Quotient(item);
    const uint32_t d2 = item - rest * by_fastest.divisor;
    const uint32_t d0 = by_middle.Quotient(rest);
    const uint32_t d1 = rest - d0 * by_middle.divisor;
    *from_offset = d0 * from[0] + d1 * from[1] + d2 * from[2];
    *to_offset = d0 * to[0] + d1 * to[1] + d2 * to[2];
  }
};

}  // namespace zpp::codec
