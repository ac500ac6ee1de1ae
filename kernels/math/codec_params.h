// What a codec call is asked to do: the format of a piece and how values are rounded. Plain
// structs, passed by value from the host APIs into the kernels.
#pragma once

#include <cstdint>

#include "kernels/math/hd.h"

namespace zpp::codec {

// The default block: 256 elements per scale (docs/codecs.md, "Choosing the block size").
inline constexpr int32_t kDefaultBlock = 256;

struct Format {
  int32_t bits = 8;               // 8 or 4
  int32_t block = kDefaultBlock;  // elements per scale: a power of two, 32 to 4096
  bool rotate = false;            // the 32-point Hadamard rotation of format.h
};

struct Rounding {
  bool stochastic = false;  // false: round to nearest even
  uint64_t seed = 0;        // the random stream: seed, rank and step epoch ...
  uint32_t rank = 0;
  uint64_t epoch = 0;
  uint64_t first_block = 0;  // ... and the block index of the piece's first block
};

// A weight-delta message (src/codec/weight_delta.h) is a piece, then this trailer: the 64-bit
// fingerprint of the reference it was taken against, and 8 zero bytes.
inline constexpr uint64_t kDeltaTrailerBytes = 16;

// Where the items of a batched codec operation sit, by formula rather than by list, so that a
// batch of any size is one fixed-size kernel argument: item i, written in mixed radix as digits
// (d0, d1, d2) with d2 the fastest (digit k below radix[k]), reads at sum d_k x from[k] and
// writes at sum d_k x to[k], in the units each operation names. Plans need up to three digits
// (rank within node, node, rack).
struct BatchMap {
  static constexpr int kDigits = 3;
  uint32_t radix[kDigits] = {1, 1, 1};
  uint64_t from[kDigits] = {0, 0, 0};
  uint64_t to[kDigits] = {0, 0, 0};

  // n items, item i at i x from_stride and i x to_stride.
  static BatchMap Strided(uint32_t n, uint64_t from_stride, uint64_t to_stride) {
    BatchMap map;
    map.radix[2] = n;
    map.from[2] = from_stride;
    map.to[2] = to_stride;
    return map;
  }

  ZPP_HD uint64_t items() const { return static_cast<uint64_t>(radix[0]) * radix[1] * radix[2]; }
  // Both offsets of item `item` (< items(), which plans keep under 2^32: one item per rank at
  // most, so the digits are found with 32-bit divisions, several times cheaper on the GPU).
  ZPP_HD void Place(uint64_t item, uint64_t* from_offset, uint64_t* to_offset) const {
    const uint32_t i = static_cast<uint32_t>(item);
    const uint32_t d2 = i % radix[2];
    const uint32_t rest = i / radix[2];
    const uint32_t d1 = rest % radix[1];
    const uint32_t d0 = rest / radix[1];
    *from_offset = d0 * from[0] + d1 * from[1] + d2 * from[2];
    *to_offset = d0 * to[0] + d1 * to[1] + d2 * to[2];
  }
  // The largest offsets any item has (every stride is non-negative).
  ZPP_HD uint64_t LastFrom() const {
    return (radix[0] - 1) * from[0] + (radix[1] - 1) * from[1] + (radix[2] - 1) * from[2];
  }
  ZPP_HD uint64_t LastTo() const {
    return (radix[0] - 1) * to[0] + (radix[1] - 1) * to[1] + (radix[2] - 1) * to[2];
  }
};

// The sums of a batched reduction: `items` sums of `terms` pieces each; term t of sum s is the
// piece at s x item_stride + t x term_stride bytes, summed in term order.
struct ReduceBatch {
  uint32_t items = 1;
  uint32_t terms = 1;
  uint64_t item_stride = 0;
  uint64_t term_stride = 0;

  ZPP_HD uint64_t Offset(uint64_t item, uint64_t term) const {
    return item * item_stride + term * term_stride;
  }
  // One past the last byte the pieces reach, for pieces of `piece_bytes`.
  uint64_t Extent(uint64_t piece_bytes) const {
    if (items == 0 || terms == 0) return 0;
    return Offset(items - 1, terms - 1) + piece_bytes;
  }
};

}  // namespace zpp::codec
