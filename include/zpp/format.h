/* zpp's wire format: the bytes of one quantized piece, as qwZ gathers them and qgZ exchanges them.
 *
 * A piece holds `count` elements of a tensor (fp32, fp16 or bf16) quantized symmetrically to int8,
 * int4, int3 or int2 with one fp32 scale per block of `block` consecutive elements. `block` is a
 * power of two from 32 to 4096; the last block is shorter when `count` is not a multiple of it
 * (tail block). Offsets below are from the piece's first byte, which must be 16-byte aligned:
 *
 *   [0, S)      the scales: blocks = ceil(count / block) IEEE fp32 values, little-endian, the
 *               scale of block b at byte 4*b; then zero bytes up to S = round_up(4 * blocks, 16).
 *   [S, S + P)  the payload, element i of the piece in block i / block:
 *               int8: one byte per element, two's complement, -127..127 (-128: non-finite);
 *               int4: two elements per byte, element 2i in the low nibble and 2i+1 in the high
 *               nibble, two's complement, -7..7 (-8: non-finite);
 *               int3: eight elements per three bytes, element 8i + j in bits 3j..3j+2 of the
 *               little-endian 24-bit word at bytes 3i..3i+2, two's complement, -3..3 (-4:
 *               non-finite); whole groups of eight (the last one's empty places 0), so the
 *               payload is 3 * ceil(count / 8) bytes before its padding;
 *               int2: four elements per byte, element 4i + j in bits 2j and 2j+1 (j = 0..3),
 *               two's complement, -1..1 (-2: non-finite; a symmetric grid of three
 *               levels, meant for gradients whose rounding error is fed back, ZPP_QGZ_EF);
 *               then zero bytes up to P = round_up(payload bytes, 16).
 *
 * Both regions are multiples of 16 bytes, so pieces laid end to end (a gather's output) all stay
 * 16-byte aligned, every block's payload starts 16-byte aligned (8-byte for int2 blocks of 32;
 * int3: 16-byte from blocks of 128, 8 for 64, 4 for 32),
 * and the device reads and writes them with vectors. Every byte of a piece, padding included, is a
 * function of the input: two encoders of the same tensor write the same bytes (hpZ fingerprints
 * rely on it). The piece carries no header: bits, block and the rotation flag are agreed by all
 * ranks through the plan, as the element count is.
 *
 * Decoding: element = q * scale in fp32 (then the inverse rotation, below), rounded to nearest
 * even into the output dtype.
 *   - the most negative code of the width (-128, -8, -4, -2) marks an element that was a NaN
 *     or an infinity: it decodes to NaN (the canonical quiet NaN of the output dtype:
 *     0x7FC00000, 0x7E00, 0x7FC0), whatever the scale. Only the finite elements count towards
 *     the block's amax, so a non-finite input never turns into finite values and costs no other
 *     element anything (a NaN in the uninitialised padding of a framework's buffer leaves the
 *     real values beside it intact).
 *   - scale == 0: the block had no finite nonzero value (amax 0); its finite elements are 0
 *     and decode to +0.
 *   - otherwise scale = max(amax / qmax, 2^-149) (qmax 127, 7, 3 or 1, amax the block's
 *     largest finite |x| after the rotation) and q = x / scale rounded to nearest even (or
 *     stochastically, which rounds up with probability equal to the fraction), clamped to
 *     +-qmax. x / scale is taken as (x * p) * fp32(1 / (scale * p)), one division per block and
 *     none per element, with p = 2^64 for scales below 2^-126 (whose reciprocal could overflow)
 *     and 1 otherwise. So |x - q * scale| <= scale / 2 up to fp32 rounding (< scale when
 *     stochastic). The 2^-149 floor keeps the scale nonzero for blocks of tiny denormals; those
 *     round-trip exactly.
 *
 * The optional rotation (a flag of the format, for every width): each complete run of 32
 * elements of the piece (elements 32j..32j+31; block sizes are multiples of 32, so runs never
 * cross blocks) is replaced by H32 * (x / 32) before the block's amax and quantization, H32 the
 * 32-point Hadamard matrix of +-1 entries in Sylvester order; the decoder applies H32 after
 * scaling (H32 * H32 = 32 I). When the piece ends inside a run (its count is not a multiple of
 * 32), the tail block, which holds that run, is not rotated at all: a rotated value is about
 * 1/sqrt(32) of the values it mixes, and one scale shared with unrotated values would leave the
 * rotated ones a few quantization steps (50 to 70% error at 4 bits). The rotation spreads an
 * outlier over its run, which cuts int4 error on heavy-tailed data (SDP4Bit, arXiv 2410.15526);
 * it spreads a NaN or an infinity too, so a non-finite value costs its whole run of 32.
 *
 * zppPieceBytes() is the one size function; the CPU reference and the CUDA kernels both use it. */
#ifndef ZPP_FORMAT_H_
#define ZPP_FORMAT_H_

#include <nccl.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define ZPP_FORMAT_FN static inline __host__ __device__
#else
#define ZPP_FORMAT_FN static inline
#endif

#define ZPP_PIECE_ALIGN 16
#define ZPP_BLOCK_MIN 32
#define ZPP_BLOCK_MAX 4096
#define ZPP_ROTATION_POINTS 32
#define ZPP_INT8_QMAX 127
#define ZPP_INT4_QMAX 7
#define ZPP_INT3_QMAX 3
#define ZPP_INT2_QMAX 1

#ifdef __cplusplus
extern "C" {
#endif

ZPP_FORMAT_FN uint64_t zppRoundUp16(uint64_t bytes) { return (bytes + 15u) & ~(uint64_t)15u; }

/* 1 for the bit widths a piece can have (8, 4, 3, 2), else 0. */
ZPP_FORMAT_FN int zppBitsValid(int bits) {
  return bits == 8 || bits == 4 || bits == 3 || bits == 2;
}

/* 1 when a piece of this dtype, bit width and block size can be encoded, else 0. */
ZPP_FORMAT_FN int zppFormatValid(ncclDataType_t dtype, int bits, int block) {
  const int dtype_ok = dtype == ncclFloat32 || dtype == ncclFloat16 || dtype == ncclBfloat16;
  const int bits_ok = zppBitsValid(bits);
  const int block_ok =
      block >= ZPP_BLOCK_MIN && block <= ZPP_BLOCK_MAX && (block & (block - 1)) == 0;
  return dtype_ok && bits_ok && block_ok;
}

/* Scales in a piece of `count` elements (block must be valid). */
ZPP_FORMAT_FN uint64_t zppPieceBlocks(uint64_t count, int block) {
  return (count + (uint64_t)block - 1u) / (uint64_t)block;
}

/* Bytes of the scale region, padding included: the payload's offset in the piece. */
ZPP_FORMAT_FN uint64_t zppPieceScaleBytes(uint64_t count, int block) {
  return zppRoundUp16(4u * zppPieceBlocks(count, block));
}

/* Bytes of the payload before its padding: what an encoder writes (int3 in whole groups). */
ZPP_FORMAT_FN uint64_t zppPiecePayloadUsed(uint64_t count, int bits) {
  if (bits == 3) return 3u * ((count + 7u) / 8u);
  const uint64_t per_byte = bits == 2 ? 4u : (bits == 4 ? 2u : 1u);
  return (count + per_byte - 1u) / per_byte;
}

/* Bytes of the payload region, padding included. */
ZPP_FORMAT_FN uint64_t zppPiecePayloadBytes(uint64_t count, int bits) {
  return zppRoundUp16(zppPiecePayloadUsed(count, bits));
}

/* Bytes of a piece: a multiple of 16; 0 for count 0 or an invalid format (zppFormatValid). The
 * dtype does not change the size (a piece is fp32 scales and integers whatever it was encoded
 * from); it is an argument so that no caller sizes a piece for a dtype the codec cannot take. */
ZPP_FORMAT_FN uint64_t zppPieceBytes(uint64_t count, ncclDataType_t dtype, int bits, int block) {
  if (!zppFormatValid(dtype, bits, block)) return 0;
  return zppPieceScaleBytes(count, block) + zppPiecePayloadBytes(count, bits);
}

#ifdef __cplusplus
}
#endif

#endif /* ZPP_FORMAT_H_ */
