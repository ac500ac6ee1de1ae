// Views of the memory a codec call reads and writes. Host memory for the CPU reference, device
// memory for the kernels' launchers: a view never owns and the host never dereferences a device
// view. Tensors may start anywhere (any element offset); pieces start 16-byte aligned.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <span>

namespace zpp::codec {

struct ConstTensorView {
  const void* data = nullptr;
  ncclDataType_t dtype = ncclFloat32;  // ncclFloat32, ncclFloat16 or ncclBfloat16
  size_t count = 0;                    // elements
};

struct TensorView {
  void* data = nullptr;
  ncclDataType_t dtype = ncclFloat32;
  size_t count = 0;
};

// One piece to dequantize, and the element of the output tensor where its first element goes.
struct PlacedPiece {
  std::span<const std::byte> bytes;
  size_t output_offset = 0;
};

}  // namespace zpp::codec
