// Argument checks shared by the CPU codec and the kernels' launchers, so both reject the same
// calls with the same message. Each returns ncclSuccess, or ncclInvalidArgument after exactly
// one WARN that names the API and what was wrong.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "kernels/math/codec_params.h"
#include "log/check.h"

namespace zpp::codec {

// The most elements one call takes (the kernels' grids and the hash counters are sized for it).
inline constexpr uint64_t kMaxCount = uint64_t{1} << 40;

Result CheckFormat(const char* api, ncclDataType_t dtype, const Format& format);

// A tensor argument: a codec dtype, count <= kMaxCount, data not null unless count is 0 and
// aligned to its element size (any element offset is fine).
Result CheckTensor(const char* api, const char* name, const void* data, ncclDataType_t dtype,
                   size_t count);

// A piece argument: 16-byte aligned, at least `needed` bytes, not null unless needed is 0.
Result CheckPiece(const char* api, const char* name, const void* data, size_t bytes,
                  uint64_t needed);

// An element count of pieces: at most kMaxCount.
Result CheckCount(const char* api, size_t count);

// A placement of `count` elements at `offset` inside a tensor of `total` elements.
Result CheckPlacement(const char* api, size_t index, size_t offset, size_t count, size_t total);

// A reduction's piece count and its factor.
Result CheckReduction(const char* api, size_t pieces, float scale_after_sum);

}  // namespace zpp::codec
