// The fingerprint on the CPU: the serial loop over 8-byte words (kernels/math/fingerprint_math.h).
#include <algorithm>
#include <cstring>

#include "codec/codec.h"
#include "kernels/math/codec_math.h"

namespace zpp::codec {

Result Fingerprint(std::span<const std::byte> bytes, uint64_t* fingerprint) {
  constexpr const char* kApi = "codec::Fingerprint";
  ZPP_CHECK_ARG(fingerprint != nullptr, "%s: fingerprint is null" ZPP_BUG_REPORT, kApi);
  ZPP_CHECK_ARG(bytes.data() != nullptr || bytes.empty(), "%s: bytes is null" ZPP_BUG_REPORT, kApi);
  uint64_t sum = FingerprintLength(bytes.size());
  uint64_t first = 0;
  if (!bytes.empty()) std::memcpy(&first, bytes.data(), std::min<size_t>(8, bytes.size()));
  bool varies = false;
  const size_t words = bytes.size() / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + 8 * i, sizeof word);
    sum += FingerprintWord(i, word);
    varies |= FingerprintWordVaries(word, first, 8);
  }
  if (const size_t tail = bytes.size() % 8; tail != 0) {
    uint64_t word = 0;  // the last word, zero-padded
    std::memcpy(&word, bytes.data() + 8 * words, tail);
    sum += FingerprintWord(words, word);
    varies |= FingerprintWordVaries(word, first, tail);
  }
  *fingerprint = sum | (varies ? kFingerprintVaries : 0);
  return ncclSuccess;
}

}  // namespace zpp::codec
