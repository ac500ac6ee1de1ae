// qwZ's weight deltas (ZPP_QWZ_DELTA) on the CPU: the reference the CUDA kernels
// (kernels/weight_delta.cu) match bit for bit, and the sim backend's codec.
//
// A delta message is a piece (include/zpp/format.h) of the difference between the sender's
// weights and its *reference* (what every receiver reconstructed of its shard last step), then a
// 16-byte trailer: the 64-bit fingerprint of that reference (kernels/math/fingerprint_math.h,
// little-endian) and 8 zero bytes. Receivers check the trailer against their copy of the
// reference before they apply the delta: a copy that differs (a reference that drifted, or one
// that is not the sender's) must never turn into silently wrong weights (contract 7), so its item
// becomes NaN and the failure is counted. Sender and receivers update the reference with the
// same arithmetic from the same bits (reference = dtype(float(reference) + decoded delta), fp32
// then rounded to nearest even), so it never drifts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/math/codec_params.h"
#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp::codec {

// Bytes of one delta message of `count` elements (0 for an invalid format).
uint64_t DeltaMessageBytes(size_t count, ncclDataType_t dtype, const Format& format);

// Encodes weights - reference (fp32 difference; one dtype and count) into `message`'s piece and
// the reference's fingerprint into its trailer.
Result EncodeDelta(ConstTensorView weights, ConstTensorView reference, const Format& format,
                   const Rounding& rounding, std::span<std::byte> message);

// `items` messages of `count` elements every `stride` bytes of `messages`; `reference` holds
// items x count elements, item i from element i x count. For each item: when its trailer's
// fingerprint equals the reference item's, reference item += its decoded delta; otherwise the
// reference item becomes NaN (the dtype's canonical NaN) and *failures grows by one.
Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                       size_t count, const Format& format, TensorView reference,
                       uint32_t* failures);

// The arguments' checks, shared with the CUDA launchers (`api` names the caller in the WARN).
Result CheckEncodeDelta(const char* api, ConstTensorView weights, ConstTensorView reference,
                        const Format& format, std::span<const std::byte> message);
Result CheckApplyDeltaBatch(const char* api, std::span<const std::byte> messages, size_t stride,
                            uint32_t items, size_t count, const Format& format,
                            TensorView reference, const uint32_t* failures);

}  // namespace zpp::codec
