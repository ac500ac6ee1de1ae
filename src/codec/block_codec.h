// The reference encoder and decoder of one block (or a run of whole blocks) on fp32 values: the
// order of operations every kernel reproduces. Quantize and the fused requantize encode with
// these; Dequantize and the fused reduce decode with these.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/piece_io.h"
#include "kernels/math/codec_params.h"

namespace zpp::codec {

// The largest run the reference works on at once: one block of the largest size.
inline constexpr size_t kMaxRun = 4096;

// Rotates (or rotates back) the 32-element runs of values[0, n) before RotatedEnd(n, block)
// (kernels/math/hadamard.h), where values[0] is an element of the piece at a block boundary (blocks
// of `block`) and n runs to the end of a whole number of blocks or of the piece.
void RotateRunsForward(float* values, size_t n, size_t block);
void RotateRunsInverse(float* values, size_t n, size_t block);

// From the rotated domain of a piece in `from` (rotated or not) to that of `to`, on values[0, n),
// the elements [first, first + n) of a piece of `count` (first a block boundary of both): run by
// run, back where only `from` rotates the run, forward where only `to` does. The two differ in
// the rotation flag, or in the tail block when the piece ends inside a run (format.h).
void ChangeRotatedDomain(float* values, uint64_t first, size_t n, uint64_t count,
                         const Format& from, const Format& to);

// All ones where the fp32 pattern `bits` is finite (IsFiniteValue), else 0: IsFiniteValue as a
// mask, for loops written without branches so that they vectorize.
inline uint32_t FiniteMask(uint32_t bits) {
  return 0u - static_cast<uint32_t>((bits & 0x7FFFFFFFu) < 0x7F800000u);
}

// Encodes values[0, n) into the piece as its elements [first, first + n): first is a block
// boundary, n <= kMaxRun, and the run holds whole blocks except at the piece's end. `stream_key`
// is StreamKey(seed, rank, epoch) of `rounding`, computed once per call.
void EncodeRun(const float* values, uint64_t first, size_t n, const Format& format,
               const Rounding& rounding, uint64_t stream_key, const PieceLayout& layout,
               std::byte* piece);

// Decodes the piece's elements [first, first + n) (same rules) to q * scale, still in the
// piece's domain: the caller rotates back.
void DecodeRun(const std::byte* piece, const PieceLayout& layout, const Format& format,
               uint64_t first, size_t n, float* values);

}  // namespace zpp::codec
