#include "codec/weight_delta.h"

#include <cstring>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/validate.h"
#include "kernels/float_bits.h"
#include "zpp/format.h"

namespace zpp::codec {

uint64_t DeltaMessageBytes(size_t count, ncclDataType_t dtype, const Format& format) {
  const uint64_t piece = PieceBytes(count, dtype, format);
  return piece == 0 && count != 0 ? 0 : piece + kDeltaTrailerBytes;
}

Result EncodeDelta(ConstTensorView weights, ConstTensorView reference, const Format& format,
                   const Rounding& rounding, std::span<std::byte> message) {
  constexpr const char* kApi = "codec::EncodeDelta";
  ZPP_CHECK(CheckFormat(kApi, weights.dtype, format));
  ZPP_CHECK(CheckTensor(kApi, "weights", weights.data, weights.dtype, weights.count));
  ZPP_CHECK(CheckTensor(kApi, "reference", reference.data, reference.dtype, reference.count));
  ZPP_CHECK_ARG(reference.dtype == weights.dtype && reference.count == weights.count,
                "%s: reference (%zu elements of dtype %d) is not the weights' shape (%zu of %d)",
                kApi, reference.count, static_cast<int>(reference.dtype), weights.count,
                static_cast<int>(weights.dtype));
  const uint64_t piece = PieceBytes(weights.count, weights.dtype, format);
  ZPP_CHECK(
      CheckPiece(kApi, "message", message.data(), message.size(), piece + kDeltaTrailerBytes));
  std::vector<float> difference(weights.count);
  std::vector<float> base(weights.count);
  LoadElements(weights.data, weights.dtype, 0, weights.count, difference.data());
  LoadElements(reference.data, reference.dtype, 0, reference.count, base.data());
  for (size_t i = 0; i < difference.size(); ++i) difference[i] -= base[i];
  ZPP_CHECK(Quantize({difference.data(), ncclFloat32, difference.size()}, format, rounding,
                     message.first(piece)));
  uint64_t fingerprint = 0;
  ZPP_CHECK(Fingerprint({static_cast<const std::byte*>(reference.data),
                         reference.count * ElementBytes(reference.dtype)},
                        &fingerprint));
  std::memcpy(message.data() + piece, &fingerprint, sizeof fingerprint);
  std::memset(message.data() + piece + sizeof fingerprint, 0,
              kDeltaTrailerBytes - sizeof fingerprint);
  return ncclSuccess;
}

Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                       size_t count, const Format& format, TensorView reference,
                       uint32_t* failures) {
  constexpr const char* kApi = "codec::ApplyDeltaBatch";
  ZPP_CHECK(CheckFormat(kApi, reference.dtype, format));
  ZPP_CHECK(CheckCount(kApi, count));
  ZPP_CHECK(CheckTensor(kApi, "reference", reference.data, reference.dtype, reference.count));
  const uint64_t piece = PieceBytes(count, reference.dtype, format);
  ZPP_CHECK_ARG(stride >= piece + kDeltaTrailerBytes && stride % ZPP_PIECE_ALIGN == 0,
                "%s: stride %zu is not a 16-byte multiple of at least %llu", kApi, stride,
                static_cast<unsigned long long>(piece + kDeltaTrailerBytes));
  ZPP_CHECK_ARG(reference.count == count * items, "%s: reference holds %zu elements, not %zu x %u",
                kApi, reference.count, count, items);
  ZPP_CHECK_ARG(items == 0 || messages.size() >= stride * (items - 1) + piece + kDeltaTrailerBytes,
                "%s: %zu message bytes are short of %u messages", kApi, messages.size(), items);
  ZPP_CHECK_ARG(failures != nullptr, "%s: failures is null", kApi);
  const size_t element = ElementBytes(reference.dtype);
  std::vector<float> delta(count);
  std::vector<float> base(count);
  for (uint32_t item = 0; item < items; ++item) {
    const std::byte* message = messages.data() + stride * item;
    auto* bytes = static_cast<std::byte*>(reference.data) + item * count * element;
    uint64_t sent = 0;
    uint64_t held = 0;
    std::memcpy(&sent, message + piece, sizeof sent);
    ZPP_CHECK(Fingerprint({bytes, count * element}, &held));
    if (sent != held) {
      // Never apply a delta to a reference the sender did not hold: NaN, loud, counted.
      const std::vector<float> nan(count, FloatFromBits(kCanonicalNaNBits));
      StoreElements(bytes, reference.dtype, 0, count, nan.data());
      ++*failures;
      continue;
    }
    const PlacedPiece placed{{message, piece}, 0};
    ZPP_CHECK(Dequantize({&placed, 1}, count, format, {delta.data(), ncclFloat32, count}));
    LoadElements(bytes, reference.dtype, 0, count, base.data());
    for (size_t i = 0; i < count; ++i) base[i] += delta[i];
    StoreElements(bytes, reference.dtype, 0, count, base.data());
  }
  return ncclSuccess;
}

}  // namespace zpp::codec
