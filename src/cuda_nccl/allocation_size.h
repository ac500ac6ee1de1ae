#pragma once

#include <cstddef>

namespace zpp::cuda {

// NCCL reads a user buffer in whole 16-byte units and masks what it writes (its maintainer,
// nvidia/nccl#265; the LL kernel read 4 bytes of zpp's 1-byte topology buffer under
// compute-sanitizer on the H100, 2026-11-27). cudaMalloc hands out 256-byte aligned blocks, so
// asking for whole 256-byte units costs no memory and keeps every over-read inside the
// allocation, for NCCL and for our own vectorized kernels alike.
inline constexpr size_t kAllocationGranule = 256;

constexpr size_t AllocationSize(size_t bytes) {
  const size_t at_least_one = bytes == 0 ? 1 : bytes;
  return (at_least_one + kAllocationGranule - 1) / kAllocationGranule * kAllocationGranule;
}

static_assert(AllocationSize(0) == kAllocationGranule);
static_assert(AllocationSize(1) == kAllocationGranule);
static_assert(AllocationSize(kAllocationGranule) == kAllocationGranule);
static_assert(AllocationSize(kAllocationGranule + 1) == 2 * kAllocationGranule);

}  // namespace zpp::cuda
