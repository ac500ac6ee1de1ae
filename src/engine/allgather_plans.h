// The all-gather plans. All ranks dequantize the same gathered pieces, their own included, so
// every rank's output is bitwise the same (contract 1).
#pragma once

#include "engine/collective_args.h"
#include "engine/plan_context.h"
#include "plan/plan.h"

namespace zpp::engine {

// Quantize the shard, all-gather the pieces over all ranks, dequantize all of them.
Result RunQwzFlatAllGather(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args);

// The inter-node stage gathers the shards (pieces, with qwZ) of this rank's local-rank peers on
// every node: that is the secondary partition. The intra-node stage gathers every local rank's
// secondary partition; the result is put into rank order (node-major) while it is decoded.
// `secondary` receives the secondary partition (nodes x piece bytes, or nodes x shard bytes);
// the caller owns and fences it.
Result RunHierarchicalAllGather(PlanContext& context, const plan::Plan& plan,
                                const AllGatherArgs& args, std::byte* secondary);

// The intra-node stage alone, from a secondary partition kept by an earlier
// RunHierarchicalAllGather of the same shards.
Result RunIntraNodeAllGather(PlanContext& context, const plan::Plan& plan,
                             const AllGatherArgs& args, const std::byte* secondary);

// The intra-node stage's receive area (every local rank's secondary partition), and the stage
// itself into it, for plans that take all their buffers before the inter-node stage.
size_t IntraNodeGatheredBytes(const Backend& backend, const plan::Plan& plan,
                              const AllGatherArgs& args);
Result RunIntraNodeStage(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args,
                         const std::byte* secondary, std::byte* gathered);

// Bytes of the secondary partition for this plan and call.
size_t SecondaryPartitionBytes(const Backend& backend, const plan::Plan& plan,
                               const AllGatherArgs& args);

}  // namespace zpp::engine
