// What the two fused list-form launchers share on the host: packing the addresses of the pieces
// to sum into the kernel argument.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/codec_kernels.h"
#include "kernels/device/sum_chunk.cuh"
#include "kernels/launch_util.h"

namespace zpp::codec::gpu::detail {

static_assert(kMaxReducePieces == device::kMaxReducePieces);

inline device::ReducePieces PackReducePieces(std::span<const std::span<const std::byte>> pieces) {
  device::ReducePieces packed{};
  for (size_t i = 0; i < pieces.size(); ++i) {
    packed.piece[i] = reinterpret_cast<const uint8_t*>(pieces[i].data());
  }
  return packed;
}

}  // namespace zpp::codec::gpu::detail
