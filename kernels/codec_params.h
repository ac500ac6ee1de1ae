// What a codec call is asked to do: the format of a piece and how values are rounded. Plain
// structs, passed by value from the host APIs into the kernels.
#pragma once

#include <cstdint>

namespace zpp::codec {

// The default block: 256 elements per scale (see README "Codecs" for the measurement).
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

}  // namespace zpp::codec
