// qwZ's weight deltas on the device, bit for bit with codec/weight_delta.cc. EncodeDelta widens
// weights and reference to fp32, subtracts, and encodes the difference as the quantize kernel
// encodes an fp32 input (one pass, no fp32 copy of the difference); then the fingerprint of the
// reference goes into the trailer. ApplyDeltaBatch must check every item's reference before any
// of it changes: one launch fingerprints all items' references into `held`, a second decodes
// each item's delta and adds it to its reference, or, where the sender's fingerprint differs,
// writes NaN and counts the failure once per item. Two launches whatever the number of nodes.
#include "kernels/codec_kernels.h"
#include "kernels/device/piece_codec.cuh"
#include "kernels/device/rotation.cuh"
#include "kernels/device/tensor_io.cuh"
#include "kernels/kernel_loading.h"
#include "kernels/launch_util.h"
#include "kernels/math/float_bits.h"
#include "kernels/math/nccl_types.h"
#include "zpp/format.h"

namespace zpp::codec::gpu {
namespace {

template <ncclDataType_t kDtype, int kBits>
__global__ void __launch_bounds__(device::kMaxLanesPerBlock)
    EncodeDeltaKernel(const void* __restrict__ weights, const void* __restrict__ reference,
                      bool aligned, device::PieceGeometry geometry, bool rotate,
                      device::RoundingStream rounding, uint8_t* __restrict__ piece) {
  __shared__ uint32_t warp_max[device::kMaxWarpsPerCta];
  const uint64_t first = device::ChunkFirstElement();
  float values[device::kChunk];
  float base[device::kChunk];
  if (aligned) {
    device::LoadChunk<kDtype, true>(weights, first, geometry.count, values);
    device::LoadChunk<kDtype, true>(reference, first, geometry.count, base);
  } else {
    device::LoadChunk<kDtype, false>(weights, first, geometry.count, values);
    device::LoadChunk<kDtype, false>(reference, first, geometry.count, base);
  }
#pragma unroll
  for (int i = 0; i < device::kChunk; ++i) values[i] -= base[i];
  if (rotate) device::RotateChunkForward(values, first, geometry);
  device::EncodeChunk<kBits>(values, first, geometry, rounding, piece, warp_max);
}

// Item y: message at messages + y x stride (its piece, then the sender's fingerprint), its
// reference elements [y x count, (y + 1) x count), the fingerprint this rank holds at held[y].
template <ncclDataType_t kDtype, int kBits>
__global__ void __launch_bounds__(256)
    ApplyDeltaKernel(const uint8_t* __restrict__ messages, uint64_t stride, uint32_t items,
                     uint64_t piece_bytes, device::PieceGeometry geometry, bool rotate,
                     void* __restrict__ reference, const uint64_t* __restrict__ held,
                     uint32_t* __restrict__ failures) {
  constexpr uint64_t kElement = NcclTypeBytes(kDtype);
  const uint64_t first = device::ChunkFirstElement();
  for (uint32_t item = blockIdx.y; item < items; item += gridDim.y) {
    const uint8_t* message = messages + item * stride;
    const uint64_t sent = *reinterpret_cast<const uint64_t*>(message + piece_bytes);
    void* bytes = static_cast<uint8_t*>(reference) + item * geometry.count * kElement;
    const bool match = sent == held[item];
    if (!match && blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(failures, 1u);
    float values[device::kChunk] = {};
    if (match) {
      if (first < geometry.count) device::DecodeChunk<kBits>(message, geometry, first, values);
      if (rotate) device::RotateChunkInverse(values, first, geometry);
    }
    if (first >= geometry.count) continue;
    float base[device::kChunk];
    const bool aligned = detail::Aligned16(bytes);
    if (match) {
      if (aligned) {
        device::LoadChunk<kDtype, true>(bytes, first, geometry.count, base);
      } else {
        device::LoadChunk<kDtype, false>(bytes, first, geometry.count, base);
      }
#pragma unroll
      for (int i = 0; i < device::kChunk; ++i) base[i] += values[i];
    } else {
      // Never apply a delta to a reference the sender did not hold: NaN, loud, counted.
#pragma unroll
      for (int i = 0; i < device::kChunk; ++i) base[i] = FloatFromBits(kCanonicalNaNBits);
    }
    if (aligned) {
      device::StoreChunk<kDtype, true>(bytes, 0, first, geometry.count, base);
    } else {
      device::StoreChunk<kDtype, false>(bytes, 0, first, geometry.count, base);
    }
  }
}

}  // namespace

cudaError_t LaunchEncodeDelta(ConstTensorView weights, ConstTensorView reference,
                              const Format& format, const Rounding& rounding, std::byte* message,
                              cudaStream_t stream) {
  const uint64_t piece = zppPieceBytes(weights.count, weights.dtype, format.bits, format.block);
  // The trailer's second word is zero on the wire (the fingerprint launch zeroes the first).
  cudaError_t error = cudaMemsetAsync(message + piece + sizeof(uint64_t), 0,
                                      kDeltaTrailerBytes - sizeof(uint64_t), stream);
  if (error != cudaSuccess) return error;
  if (weights.count != 0) {
    const device::PieceGeometry geometry = detail::GeometryOf(weights.count, format);
    const int threads = detail::ThreadsFor(format.block);
    const dim3 grid(detail::GridFor(weights.count, threads));
    const bool aligned = detail::Aligned16(weights.data) && detail::Aligned16(reference.data);
    auto* out = reinterpret_cast<uint8_t*>(message);
    detail::WithDtypeAndBits(weights.dtype, format.bits, [&]<ncclDataType_t kDtype, int kBits>() {
      EncodeDeltaKernel<kDtype, kBits>
          <<<grid, threads, 0, stream>>>(weights.data, reference.data, aligned, geometry,
                                         format.rotate, detail::StreamOf(rounding), out);
    });
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  return LaunchFingerprintBatch(static_cast<const std::byte*>(reference.data),
                                reference.count * NcclTypeBytes(reference.dtype), 1, 0,
                                message + piece, sizeof(uint64_t), stream);
}

cudaError_t LaunchApplyDeltaBatch(const std::byte* messages, size_t stride, uint32_t items,
                                  size_t count, const Format& format, TensorView reference,
                                  std::byte* held, uint32_t* failures, cudaStream_t stream) {
  if (items == 0) return cudaSuccess;
  const size_t element = NcclTypeBytes(reference.dtype);
  const cudaError_t error =
      LaunchFingerprintBatch(static_cast<const std::byte*>(reference.data), count * element, items,
                             count * element, held, sizeof(uint64_t), stream);
  if (error != cudaSuccess) return error;
  const device::PieceGeometry geometry = detail::GeometryOf(count, format);
  const int threads = 256;
  const dim3 grid(count == 0 ? 1 : detail::GridFor(count, threads), detail::RowsFor(items));
  const uint64_t piece = zppPieceBytes(count, reference.dtype, format.bits, format.block);
  detail::WithDtypeAndBits(reference.dtype, format.bits, [&]<ncclDataType_t kDtype, int kBits>() {
    ApplyDeltaKernel<kDtype, kBits><<<grid, threads, 0, stream>>>(
        reinterpret_cast<const uint8_t*>(messages), stride, items, piece, geometry, format.rotate,
        reference.data, reinterpret_cast<const uint64_t*>(held), failures);
  });
  return cudaGetLastError();
}

namespace detail {
bool LoadWeightDeltaKernels() {
  bool ok = true;
  ForEveryDtypeAndBits([&]<ncclDataType_t kDtype, int kBits>() {
    ok = LoadKernel(&EncodeDeltaKernel<kDtype, kBits>) && ok;
    ok = LoadKernel(&ApplyDeltaKernel<kDtype, kBits>) && ok;
  });
  return ok;
}
}  // namespace detail

}  // namespace zpp::codec::gpu
