#include "costmodel/step_projection.h"

#include "plan/planner.h"

namespace zpp::costmodel {

plan::Shape UniformShape(int nodes, int gpus_per_node) {
  plan::Shape shape;
  shape.world = nodes * gpus_per_node;
  shape.nodes = nodes;
  shape.min_local_size = gpus_per_node;
  shape.racks = 1;
  shape.nodes_per_rack = nodes;
  shape.hierarchical_allowed = nodes > 1 && gpus_per_node > 1;
  return shape;
}

StepProjection ProjectStep(const std::vector<uint64_t>& unit_elements, ncclDataType_t dtype,
                           const plan::Settings& settings, const ClusterModel& model) {
  const plan::Shape shape = UniformShape(model.nodes, model.gpus_per_node);
  const uint64_t ranks = static_cast<uint64_t>(shape.world);
  StepProjection step;
  double plain_gather_off_node = 0;
  auto add = [&](const plan::Call& call, bool hpz_hit) {
    plan::HpzState hpz;
    hpz.hit = hpz_hit;
    const plan::Plan plan = plan::MakePlan(call, shape, settings, hpz);
    const CallTime time = TimeOf(plan, call, model);
    step.comm_us += time.comm_us;
    step.codec_us += time.codec_us;
    step.off_node_bytes +=
        static_cast<double>(BytesOf(plan, call, model.nodes, model.gpus_per_node).off_node) *
        static_cast<double>(ranks);
  };
  for (uint64_t elements : unit_elements) {
    plan::Call gather{plan::CollectiveOp::kAllGather, (elements + ranks - 1) / ranks, dtype,
                      plan::Reduction::kNone};
    plan::Call scatter{plan::CollectiveOp::kReduceScatter, gather.count, dtype,
                       plan::Reduction::kSum};
    add(gather, false);                                       // forward
    add(gather, settings.hpz && shape.hierarchical_allowed);  // backward
    add(scatter, false);                                      // gradients
    plan::Plan plain;                                         // pass-through
    plain_gather_off_node += static_cast<double>(
        BytesOf(plain, gather, model.nodes, model.gpus_per_node).off_node * ranks);
  }
  step.relative_volume =
      plain_gather_off_node > 0 ? step.off_node_bytes / plain_gather_off_node : 0;
  return step;
}

}  // namespace zpp::costmodel
