#include "codec/weight_delta.h"

#include <cstring>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/validate.h"
#include "kernels/math/float_bits.h"
#include "zpp/format.h"

namespace zpp::codec {

uint64_t DeltaMessageBytes(size_t count, ncclDataType_t dtype, const Format& format) {
  const uint64_t piece = PieceBytes(count, dtype, format);
  return piece == 0 && count != 0 ? 0 : piece + kDeltaTrailerBytes;
}

Result CheckEncodeDelta(const char* api, ConstTensorView weights, ConstTensorView reference,
                        const Format& format, std::span<const std::byte> message) {
  ZPP_CHECK(CheckFormat(api, weights.dtype, format));
  ZPP_CHECK(CheckTensor(api, "weights", weights.data, weights.dtype, weights.count));
  ZPP_CHECK(CheckTensor(api, "reference", reference.data, reference.dtype, reference.count));
  ZPP_CHECK_ARG(reference.dtype == weights.dtype && reference.count == weights.count,
                "%s: reference (%zu elements of dtype %d) is not the weights' shape (%zu of "
                "%d)" ZPP_BUG_REPORT,
                api, reference.count, static_cast<int>(reference.dtype), weights.count,
                static_cast<int>(weights.dtype));
  return CheckPiece(api, "message", message.data(), message.size(),
                    DeltaMessageBytes(weights.count, weights.dtype, format));
}

Result CheckApplyDeltaBatch(const char* api, std::span<const std::byte> messages, size_t stride,
                            uint32_t items, size_t count, const Format& format,
                            TensorView reference, const uint32_t* failures) {
  ZPP_CHECK(CheckFormat(api, reference.dtype, format));
  ZPP_CHECK(CheckCount(api, count));
  ZPP_CHECK(CheckTensor(api, "reference", reference.data, reference.dtype, reference.count));
  const uint64_t message = DeltaMessageBytes(count, reference.dtype, format);
  ZPP_CHECK_ARG(stride >= message && stride % ZPP_PIECE_ALIGN == 0,
                "%s: stride %zu is not a 16-byte multiple of at least %llu" ZPP_BUG_REPORT, api,
                stride, static_cast<unsigned long long>(message));
  ZPP_CHECK_ARG(reference.count == count * items,
                "%s: reference holds %zu elements, not %zu x %u" ZPP_BUG_REPORT, api,
                reference.count, count, items);
  ZPP_CHECK_ARG(items == 0 || messages.size() >= stride * (items - 1) + message,
                "%s: %zu message bytes are short of %u messages" ZPP_BUG_REPORT, api,
                messages.size(), items);
  ZPP_CHECK_ARG(failures != nullptr, "%s: failures is null" ZPP_BUG_REPORT, api);
  return ncclSuccess;
}

Result EncodeDelta(ConstTensorView weights, ConstTensorView reference, const Format& format,
                   const Rounding& rounding, std::span<std::byte> message) {
  ZPP_CHECK(CheckEncodeDelta("codec::EncodeDelta", weights, reference, format, message));
  const uint64_t piece = PieceBytes(weights.count, weights.dtype, format);
  std::vector<float> difference(weights.count);
  std::vector<float> base(weights.count);
  LoadElements(weights.data, weights.dtype, 0, weights.count, difference.data());
  LoadElements(reference.data, reference.dtype, 0, reference.count, base.data());
  for (size_t i = 0; i < difference.size(); ++i) difference[i] -= base[i];
  ZPP_CHECK(Quantize({difference.data(), ncclFloat32, difference.size()}, format, rounding,
                     message.first(piece)));
  uint64_t fingerprint = 0;
  ZPP_CHECK(Fingerprint({static_cast<const std::byte*>(reference.data),
                         reference.count * NcclTypeBytes(reference.dtype)},
                        &fingerprint));
  std::memcpy(message.data() + piece, &fingerprint, sizeof fingerprint);
  std::memset(message.data() + piece + sizeof fingerprint, 0,
              kDeltaTrailerBytes - sizeof fingerprint);
  return ncclSuccess;
}

Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                       size_t count, const Format& format, TensorView reference,
                       uint32_t* failures) {
  ZPP_CHECK(CheckApplyDeltaBatch("codec::ApplyDeltaBatch", messages, stride, items, count, format,
                                 reference, failures));
  const uint64_t piece = PieceBytes(count, reference.dtype, format);
  const size_t element = NcclTypeBytes(reference.dtype);
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
