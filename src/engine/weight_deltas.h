// qwZ's weight deltas (ZPP_QWZ_DELTA): the inter-node stage of a hierarchical weight all-gather
// sends, when every receiver still holds what it reconstructed of each shard last step (the
// *reference*), the block-quantized difference between the shard and that reference, instead
// of the shard (SDP4Bit's idea, at the NCCL layer). The error left is a fraction of one step's
// change, not of the weight, and sender and receivers update the reference with the same
// arithmetic from the same bits (codec/weight_delta.h), so it never drifts.
//
// References: every rank keeps its inter-node group's reconstructed shards (its secondary
// partition, in the weights' dtype: nodes x the shard) across the step boundary, by the call's
// place among the step's delta-plan fills with its count and dtype (engine/step_slots.h): never
// its address, and not its content, which is what changed. The fill's secondary partition is a
// copy of the updated reference, so hpZ's backward hits read it as usual.
//
// A delta is sent only when every rank can apply it, decided from state that is the same on
// every rank: the same place held the same (count, dtype) last step and its reference was kept
// (same sizes and order on every rank), the step epoch is not a refresh (every
// ZPP_QWZ_DELTA_REFRESH epochs), and no epoch record has reported an hpZ verification failure on
// any rank. Otherwise the call sends in full (ZPP_QWZ_BITS pieces with ZPP_QWZ,
// else the exact shard), on every rank alike, and the reference starts afresh from what was
// received. Each delta carries the fingerprint of the sender's reference; a receiver whose copy
// differs turns that shard into NaN (never silently wrong weights) and counts an hpZ
// verification failure, which the next epoch records carry to every rank; deltas then send in
// full for good, while hpZ's reuse goes on.
//
// Memory: the references are bounded by ZPP_HPZ_MAX_MB (apart from hpZ's kept partitions) and
// come from the pool; a call past the bound, or refused, runs full sends and keeps nothing.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/collective_args.h"
#include "engine/plan_context.h"
#include "engine/step_slots.h"
#include "plan/plan.h"
#include "stats/stats.h"

namespace zpp::engine {

class WeightDeltas {
 public:
  WeightDeltas(BufferPool& pool, uint64_t max_bytes, uint64_t refresh, StatsCounters& stats,
               std::function<uint64_t()> epoch);

  // A delta plan's fill: the inter-node stage (a delta when `allowed` and the reference holds,
  // else in full) into `secondary` (the raw secondary partition), then the intra-node stage.
  // `failures` is hpZ's device counter of verification failures.
  Result RunFill(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args,
                 bool allowed, uint32_t* failures, std::byte* secondary);

  uint64_t kept_bytes() const { return slots_.kept_bytes(); }
  // Flips a bit of byte `byte` of this rank's reference partition at `place` (no device work may
  // be pending): a reference that drifted. False when none is kept there.
  bool DamageReferenceForTesting(size_t place, size_t byte);

 private:
  StepSlots slots_;
  const uint64_t refresh_;
  StatsCounters& stats_;
  std::function<uint64_t()> epoch_;
};

}  // namespace zpp::engine
