// zpp's staging memory is allocated at one point only: communicator set-up, where the ranks agree
// on the outcome. PyTorch's caching allocator often holds most of the device memory, so an
// allocation can fail on one rank while the others succeed; on the collective path that rank
// could neither run zpp's plan (no buffers) nor pass the call through to NCCL alone (its peers
// run the plan's collectives on sub-communicators: all would wait forever, contract 3). So every
// rank reserves ZPP_POOL_MB here, the ranks agree on whether all succeeded, and every buffer
// after is carved from the reservation (fence/buffer_pool.h): no allocation fails on one rank
// only, and a call that does not fit passes through on every rank alike.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "fence/buffer_pool.h"
#include "plan/plan.h"
#include "topology/byte_all_gather.h"

namespace zpp::engine {

// What set-up reserves: `pool_bytes` (ZPP_POOL_MB) when the ranks agreed on their settings and a
// technique is on; nothing otherwise (zpp loaded for its stats, or a communicator the user left to
// NCCL), since every call then passes through and the memory is the framework's to use.
uint64_t StagingReservationBytes(const plan::Settings& settings, bool config_agreed,
                                 uint64_t pool_bytes);

// Collective over the exchange's ranks: each reserves `bytes` and the ranks agree on the outcome.
// *out becomes a bounded pool over the reservation, or, when it failed on any rank, one with
// nothing (every call that needs staging passes through, reason pool), with one WARN naming the
// ranks. Fails only when the exchange itself does.
Result ReserveStagingPool(Backend& backend, topology::ByteAllGather& exchange, uint64_t bytes,
                          bool fence_enabled, std::unique_ptr<BufferPool>* out);

}  // namespace zpp::engine
