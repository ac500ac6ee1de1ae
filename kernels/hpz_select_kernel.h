// hpZ's choice of the partition a hit sends, as device work (src/backend/backend.h,
// SelectPartition; codec/math/hpz_select_math.h). The candidates travel as a kernel argument:
// nothing allocates, synchronizes or calls back, so it captures.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/math/hpz_select_math.h"
#include "log/check.h"

namespace zpp::codec::gpu {

// As codec::SelectPartition (src/codec/hpz_select.h): `counters` in host-visible memory.
Result SelectPartition(const uint64_t* now, const HpzCandidates& candidates, uint32_t hit,
                       std::span<std::byte> send, uint32_t* counters, cudaStream_t stream);

}  // namespace zpp::codec::gpu
