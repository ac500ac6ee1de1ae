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

// What set-up reserves: `pool_bytes` (ZPP_POOL_MB) when some plan of the techniques on can run on
// this communicator's shape; nothing otherwise (every technique off, settings disagreed, one
// rank, hpZ alone without a hierarchy, a flat qgZ that would move more than NCCL's ring), since
// every call then passes through and the memory is the framework's to use. A large job makes
// dozens of communicators (point-to-point pairs, HSDP's replicate groups, DeepSpeed's extra
// groups): only those that can run a plan take device memory.
uint64_t StagingReservationBytes(const plan::Settings& settings, const plan::Shape& shape,
                                 uint64_t pool_bytes);

// Collective over the exchange's ranks: each reserves `bytes` and the ranks agree on the outcome.
// *out becomes a bounded pool over the reservation, or, when it failed on any rank, one with
// nothing (every call that needs staging passes through, reason pool), with one WARN naming the
// ranks. Fails only when the exchange itself does.
Result ReserveStagingPool(Backend& backend, topology::ByteAllGather& exchange, uint64_t bytes,
                          bool fence_enabled, std::unique_ptr<BufferPool>* out);

}  // namespace zpp::engine
