// Quantize: each thread loads its chunk of the tensor (16-byte vectors when aligned), widens it
// to fp32, rotates it with its run's lanes, and encodes it with its block's lanes.
#include "codec/validate.h"
#include "kernels/codec_kernels.h"
#include "kernels/device/rotation.cuh"
#include "kernels/device/tensor_io.cuh"
#include "kernels/launch_util.h"

namespace zpp::codec::gpu {
namespace {

template <ncclDataType_t kDtype, int kBits, bool kAligned>
__global__ void __launch_bounds__(device::kMaxLanesPerBlock)
    QuantizeKernel(const void* __restrict__ input, device::PieceGeometry geometry, bool rotate,
                   device::RoundingStream rounding, uint8_t* __restrict__ piece) {
  __shared__ uint32_t warp_max[device::kMaxWarpsPerCta];
  const uint64_t first = device::ChunkFirstElement();
  float values[device::kChunk];
  device::LoadChunk<kDtype, kAligned>(input, first, geometry.count, values);
  if (rotate) device::RotateChunkForward(values, first, geometry.count);
  device::EncodeChunk<kBits>(values, first, geometry, rounding, piece, warp_max);
}

}  // namespace

Result Quantize(ConstTensorView input, const Format& format, const Rounding& rounding,
                std::span<std::byte> piece, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::Quantize";
  ZPP_CHECK(CheckFormat(kApi, input.dtype, format));
  ZPP_CHECK(CheckTensor(kApi, "input", input.data, input.dtype, input.count));
  const device::PieceGeometry geometry = detail::GeometryOf(input.count, format);
  ZPP_CHECK(CheckPiece(kApi, "piece", piece.data(), piece.size(),
                       geometry.scale_bytes + geometry.payload_bytes));
  if (input.count == 0) return ncclSuccess;

  const int threads = detail::ThreadsFor(format.block);
  const unsigned grid = detail::GridFor(input.count, threads);
  const device::RoundingStream stream_of_bits = detail::StreamOf(rounding);
  auto* out = reinterpret_cast<uint8_t*>(piece.data());
  detail::WithDtype(input.dtype, [&](auto dtype) {
    detail::WithBits(format.bits, [&](auto bits) {
      detail::WithBool(detail::Aligned16(input.data), [&](auto aligned) {
        QuantizeKernel<decltype(dtype)::value, decltype(bits)::value, decltype(aligned)::value>
            <<<grid, threads, 0, stream>>>(input.data, geometry, format.rotate, stream_of_bits,
                                           out);
      });
    });
  });
  return detail::CheckLaunch(kApi);
}

}  // namespace zpp::codec::gpu
