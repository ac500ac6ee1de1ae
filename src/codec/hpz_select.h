// hpZ's choice of the secondary partition a hit sends, on the CPU (kernels/math/hpz_select_math.h):
// the reference the sim backend runs and the CUDA kernel matches byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/math/hpz_select_math.h"
#include "log/check.h"

namespace zpp::codec {

// Copies into `send` the first `send.size()` bytes of the partition of the first candidate
// whose fingerprint equals *now; when none does, fills `send` with kHpzPoisonByte and adds one
// to counters[kHpzFailuresCounter]. Adds HpzChoiceTerm(hit, the chosen fill's position or -1)
// to counters[kHpzChoicesCounter]. Every candidate's partition holds at least send.size() bytes.
Result SelectPartition(const uint64_t* now, const HpzCandidates& candidates, uint32_t hit,
                       std::span<std::byte> send, uint32_t* counters);

// SelectPartition's argument checks, the CUDA launcher's too (one WARN and ncclInvalidArgument).
Result CheckSelectPartition(const char* api, const uint64_t* now, const HpzCandidates& candidates,
                            std::span<std::byte> send, const uint32_t* counters);

}  // namespace zpp::codec
