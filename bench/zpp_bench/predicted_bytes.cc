#include "bench/zpp_bench/predicted_bytes.h"

#include "costmodel/cost_model.h"
#include "costmodel/step_projection.h"
#include "plan/planner.h"

namespace zpp::bench {

plan::Call CallOf(const CollectiveCase& what) {
  return {
      what.op, what.count, what.dtype,
      what.op == plan::CollectiveOp::kAllGather ? plan::Reduction::kNone : plan::Reduction::kSum};
}

plan::Plan PlainPlan(const CollectiveCase& what, int nodes, int gpus_per_node) {
  // No technique on: the planner answers with a pass-through that carries the ring's bytes.
  return plan::MakePlan(CallOf(what), costmodel::UniformShape(nodes, gpus_per_node),
                        plan::Settings{}, plan::HpzState{});
}

void SetPredictedBytes(const plan::Plan& plan, const CollectiveCase& what, int nodes,
                       int gpus_per_node, Measurement* m) {
  const costmodel::RankBytes bytes = costmodel::BytesOf(plan, CallOf(what), nodes, gpus_per_node);
  const auto ranks = static_cast<uint64_t>(nodes) * static_cast<uint64_t>(gpus_per_node);
  m->bytes_intra_node = bytes.intra_node * ranks;
  m->bytes_inter_node = bytes.off_node * ranks;
  m->bytes_inter_rack = 0;
}

}  // namespace zpp::bench
