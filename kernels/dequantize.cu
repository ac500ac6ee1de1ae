// Dequantize: a 2-D grid, x over the chunks of a piece and y over the pieces of a batch; each
// thread decodes its chunk, rotates it back with its run's lanes and stores it at the piece's
// place in the output. Piece addresses and places travel as kernel arguments, in batches.
#include <algorithm>
#include <string>

#include "codec/validate.h"
#include "kernels/codec_kernels.h"
#include "kernels/device/piece_codec.cuh"
#include "kernels/device/rotation.cuh"
#include "kernels/device/tensor_io.cuh"
#include "kernels/launch_util.h"

namespace zpp::codec::gpu {
namespace {

// 128 pieces, 2 KiB of kernel arguments: well inside the 4 KiB every CUDA version accepts.
constexpr size_t kPiecesPerLaunch = 128;

struct PieceBatch {
  const uint8_t* piece[kPiecesPerLaunch];
  uint64_t output_offset[kPiecesPerLaunch];
};

template <ncclDataType_t kDtype, int kBits, bool kAligned>
__global__ void __launch_bounds__(256)
    DequantizeKernel(PieceBatch batch, device::PieceGeometry geometry, bool rotate,
                     void* __restrict__ output) {
  const uint64_t first = device::ChunkFirstElement();
  float values[device::kChunk] = {};
  if (first < geometry.count) {
    device::DecodeChunk<kBits>(batch.piece[blockIdx.y], geometry, first, values);
  }
  if (rotate) device::RotateChunkInverse(values, first, geometry.count);
  if (first < geometry.count) {
    device::StoreChunk<kDtype, kAligned>(output, batch.output_offset[blockIdx.y], first,
                                         geometry.count, values);
  }
}

}  // namespace

Result Dequantize(std::span<const PlacedPiece> pieces, size_t count, const Format& format,
                  TensorView output, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::Dequantize";
  ZPP_CHECK(CheckFormat(kApi, output.dtype, format));
  ZPP_CHECK(CheckTensor(kApi, "output", output.data, output.dtype, output.count));
  ZPP_CHECK(CheckCount(kApi, count));
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string name = "pieces[" + std::to_string(i) + "]";
    ZPP_CHECK(CheckPiece(kApi, name.c_str(), pieces[i].bytes.data(), pieces[i].bytes.size(),
                         geometry.scale_bytes + geometry.payload_bytes));
    ZPP_CHECK(CheckPlacement(kApi, i, pieces[i].output_offset, count, output.count));
  }
  if (count == 0 || pieces.empty()) return ncclSuccess;

  const int threads = 256;
  const size_t element_bytes = output.dtype == ncclFloat32 ? 4 : 2;
  for (size_t start = 0; start < pieces.size(); start += kPiecesPerLaunch) {
    const size_t n = std::min(kPiecesPerLaunch, pieces.size() - start);
    PieceBatch batch{};
    bool aligned = detail::Aligned16(output.data);
    for (size_t i = 0; i < n; ++i) {
      batch.piece[i] = reinterpret_cast<const uint8_t*>(pieces[start + i].bytes.data());
      batch.output_offset[i] = pieces[start + i].output_offset;
      aligned = aligned && (batch.output_offset[i] * element_bytes) % 16 == 0;
    }
    const dim3 grid(detail::GridFor(count, threads), static_cast<unsigned>(n));
    detail::WithDtype(output.dtype, [&](auto dtype) {
      detail::WithBits(format.bits, [&](auto bits) {
        detail::WithBool(aligned, [&](auto is_aligned) {
          DequantizeKernel<decltype(dtype)::value, decltype(bits)::value,
                           decltype(is_aligned)::value>
              <<<grid, threads, 0, stream>>>(batch, geometry, format.rotate, output.data);
        });
      });
    });
    ZPP_CHECK(detail::CheckLaunch(kApi));
  }
  return ncclSuccess;
}

}  // namespace zpp::codec::gpu
