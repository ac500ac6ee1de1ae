// The all-reduce plans (ZPP_QAR). DDP and HSDP assume that every replica holds the same
// parameters forever, so every rank must end with bitwise the same output: the rank that owns a
// reduced share decodes the pieces everyone else decodes, its own included, never its exact sum
// (a replica that kept its exact sum would drift from the others one rounding at a time).
#pragma once

#include "engine/collective_args.h"
#include "engine/plan_context.h"
#include "engine/step_slots.h"
#include "plan/plan.h"

namespace zpp::engine {

// Intra-node reduce-scatter at full precision (local rank l gets the node's sum of chunk l);
// across nodes, among the ranks of local rank l, a quantized reduce-scatter of that chunk (fp32
// accumulation, the op's scale applied to the sum) and a quantized all-gather of the owners'
// sums, every rank decoding every piece; then the intra-node all-gather of the chunks. A count
// that world does not divide is padded with zeros in staging. In place when send == recv.
// With `feedback` (ZPP_QAR_EF), both inter-node quantizations take their residuals in and write
// the new ones back (QarFeedbackBytes in the slot's lease).
Result RunQarHierarchicalAllReduce(PlanContext& context, const plan::Plan& plan,
                                   const AllReduceArgs& args, const StepSlots::Slot* feedback);

// The residual bytes an all-reduce keeps under ZPP_QAR_EF: int8 pieces of its share, one per
// node and one for the owner's sum.
size_t QarFeedbackBytes(const plan::Plan& plan, const AllReduceArgs& args, int nodes, int world);

// NCCL's all-reduce built of the backend's collectives (reduce-scatter then all-gather over the
// world, fp32 accumulation, exact): what a pass-through runs where no NCCL sits underneath (the
// CPU communicator).
Result RunPlainAllReduce(PlanContext& context, const AllReduceArgs& args);

// The factor applied after the sum: 1, 1/world or the host pre-multiplier (a device scalar is
// applied after the plan, as for reduce-scatter).
float AllReduceScale(const AllReduceArgs& args, int world);

}  // namespace zpp::engine
