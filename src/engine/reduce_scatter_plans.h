// The qgZ reduce-scatter plans: NCCL's layout (rank r gets chunk r of the reduction) and op
// semantics (sum, avg, pre-multiplied sum), accumulation in fp32, one quantization per level.
#pragma once

#include "engine/collective_args.h"
#include "engine/plan_context.h"
#include "engine/step_slots.h"
#include "plan/plan.h"

namespace zpp::engine {

// Every rank quantizes its n chunks and sends chunk j to rank j in one all-to-all; each rank
// dequantizes and sums the n pieces it receives.
Result RunQgzFlatReduceScatter(PlanContext& context, const plan::Plan& plan,
                               const ReduceScatterArgs& args);

// Intra-node all-to-all (each local peer gets the chunks of every rank with its local rank),
// sum and requantize per destination node, inter-node all-to-all among equal local ranks,
// dequantize-sum. Each rank's data crosses nodes once, at the inter-node bit width. With
// `feedback` (ZPP_QGZ_EF), the node sums take the residual in and write the new one back.
Result RunQgzHierarchicalReduceScatter(PlanContext& context, const plan::Plan& plan,
                                       const ReduceScatterArgs& args,
                                       const StepSlots::Slot* feedback);

// The residual bytes a hierarchical qgZ call keeps under ZPP_QGZ_EF: one int8 piece of the
// chunk per destination node.
size_t FeedbackBytes(const plan::Plan& plan, const ReduceScatterArgs& args, int nodes);

// The same with the inter-node stage split into nodes of the rack, then racks.
Result RunQgzThreeLevelReduceScatter(PlanContext& context, const plan::Plan& plan,
                                     const ReduceScatterArgs& args);

// The factor applied after the sum: 1, 1/n or the pre-multiplier (1 for a device scalar, which
// the engine applies after the plan).
float ScaleAfterSum(plan::Reduction reduction, float premul, const void* premul_device, int ranks);
float ScaleAfterSum(const ReduceScatterArgs& args, int ranks);

}  // namespace zpp::engine
