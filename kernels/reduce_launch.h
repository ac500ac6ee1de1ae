// What the two fused launchers share on the host: checking the pieces to sum, and packing their
// addresses into the kernel argument.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "codec/validate.h"
#include "kernels/codec_kernels.h"
#include "kernels/device/sum_chunk.cuh"
#include "kernels/launch_util.h"

namespace zpp::codec::gpu::detail {

static_assert(kMaxReducePieces == device::kMaxReducePieces);

inline Result CheckReduceInputs(const char* api, std::span<const std::span<const std::byte>> pieces,
                                size_t count, const Format& format, float scale_after_sum,
                                const device::PieceGeometry& geometry) {
  ZPP_CHECK(CheckFormat(api, ncclFloat32, format));
  ZPP_CHECK(CheckCount(api, count));
  ZPP_CHECK(CheckReduction(api, pieces.size(), scale_after_sum));
  ZPP_CHECK_ARG(pieces.size() <= kMaxReducePieces,
                "%s: %zu pieces, at most %zu in one call" ZPP_BUG_REPORT, api, pieces.size(),
                kMaxReducePieces);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string name = "pieces[" + std::to_string(i) + "]";
    ZPP_CHECK(CheckPiece(api, name.c_str(), pieces[i].data(), pieces[i].size(),
                         geometry.scale_bytes + geometry.payload_bytes));
  }
  return ncclSuccess;
}

inline device::ReducePieces PackReducePieces(std::span<const std::span<const std::byte>> pieces) {
  device::ReducePieces packed{};
  for (size_t i = 0; i < pieces.size(); ++i) {
    packed.piece[i] = reinterpret_cast<const uint8_t*>(pieces[i].data());
  }
  return packed;
}

}  // namespace zpp::codec::gpu::detail
