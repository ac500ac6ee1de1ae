// The fingerprint and qwZ's weight deltas on the GPU, checked (codec_gpu.h).
#include <cstdint>

#include "codec/weight_delta.h"
#include "codec_gpu/codec_gpu.h"

namespace zpp::codec::gpu {
namespace {

bool Aligned16(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

}  // namespace

Result FingerprintBatch(const std::byte* data, size_t bytes, uint32_t items, size_t item_stride,
                        std::byte* out, size_t out_stride, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::FingerprintBatch";
  ZPP_CHECK_ARG(out != nullptr || items == 0, "%s: out is null" ZPP_BUG_REPORT, kApi);
  ZPP_CHECK_ARG(reinterpret_cast<uintptr_t>(out) % 8 == 0 && (items <= 1 || out_stride % 8 == 0),
                "%s: fingerprints at %p every %zu bytes are not 8-byte aligned" ZPP_BUG_REPORT,
                kApi, static_cast<void*>(out), out_stride);
  ZPP_CHECK_ARG(items <= 1 || out_stride >= 8,
                "%s: fingerprints every %zu bytes overlap" ZPP_BUG_REPORT, kApi, out_stride);
  ZPP_CHECK_ARG(data != nullptr || bytes == 0 || items == 0, "%s: bytes is null" ZPP_BUG_REPORT,
                kApi);
  return CheckCuda(
      kApi, LaunchFingerprintBatch(data, bytes, items, item_stride, out, out_stride, stream));
}

Result Fingerprint(std::span<const std::byte> bytes, uint64_t* device_fingerprint,
                   cudaStream_t stream) {
  // One item: FingerprintBatch checks the pointers and the alignment.
  return FingerprintBatch(bytes.data(), bytes.size(), 1, 0,
                          reinterpret_cast<std::byte*>(device_fingerprint), sizeof(uint64_t),
                          stream);
}

Result EncodeDelta(ConstTensorView weights, ConstTensorView reference, const Format& format,
                   const Rounding& rounding, std::span<std::byte> message, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::EncodeDelta";
  ZPP_CHECK(CheckEncodeDelta(kApi, weights, reference, format, message));
  return CheckCuda(kApi,
                   LaunchEncodeDelta(weights, reference, format, rounding, message.data(), stream));
}

Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                       size_t count, const Format& format, TensorView reference,
                       std::span<std::byte> held, uint32_t* failures, cudaStream_t stream) {
  constexpr const char* kApi = "codec::gpu::ApplyDeltaBatch";
  ZPP_CHECK(
      CheckApplyDeltaBatch(kApi, messages, stride, items, count, format, reference, failures));
  ZPP_CHECK_ARG(
      held.size() >= static_cast<size_t>(items) * sizeof(uint64_t) && Aligned16(held.data()),
      "%s: %zu bytes at %p cannot hold %u fingerprints (8 bytes each, 16-byte "
      "aligned)" ZPP_BUG_REPORT,
      kApi, held.size(), static_cast<void*>(held.data()), items);
  return CheckCuda(kApi, LaunchApplyDeltaBatch(messages.data(), stride, items, count, format,
                                               reference, held.data(), failures, stream));
}

}  // namespace zpp::codec::gpu
