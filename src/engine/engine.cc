#include "engine/engine.h"

#include "config/config.h"
#include "engine/all_reduce_plans.h"
#include "engine/allgather_plans.h"
#include "engine/reduce_scatter_plans.h"
#include "epoch/step_epoch.h"
#include "kernels/math/nccl_types.h"
#include "log/log.h"
#include "plan/planner.h"

namespace zpp::engine {

EngineOptions OptionsFrom(const Config& config) {
  EngineOptions options;
  options.settings = plan::SettingsFrom(config);
  options.fence_enabled = config.fence != 0;
  options.hpz_max_bytes = static_cast<uint64_t>(config.hpz_max_mb) << 20;
  options.pool_bytes = static_cast<uint64_t>(config.pool_mb) << 20;
  options.ef_max_bytes = static_cast<uint64_t>(config.ef_max_mb) << 20;
  options.delta_refresh = static_cast<uint64_t>(config.qwz_delta_refresh);
  options.tune = config.tune != 0;
  return options;
}

Engine::Engine(Backend& backend, const plan::Shape& shape, const EngineOptions& options,
               StatsCounters& stats, std::unique_ptr<BufferPool> pool)
    : backend_(backend),
      shape_(shape),
      settings_(options.settings),
      tuning_(options.tuning),
      pool_(pool ? std::move(pool) : std::make_unique<BufferPool>(backend, options.fence_enabled)),
      stats_(stats) {
  ReportConfigOnce();
  std::function<uint64_t()> epoch = options.epoch;
  if (!epoch) epoch = [] { return ProcessStepEpoch().Current(); };
  // Only on agreed settings: hpZ's step guard joins a collective where some engine runs hpZ.
  if (settings_.hpz && shape_.hierarchical_allowed && shape_.config_agreed) {
    hpz_ = std::make_unique<HpzCache>(backend_, options.hpz_max_bytes, stats_, epoch);
    if (settings_.qwz_delta) {
      deltas_ = std::make_unique<WeightDeltas>(*pool_, options.hpz_max_bytes, options.delta_refresh,
                                               stats_, epoch);
      hpz_->set_weight_deltas(deltas_.get());
    }
  }
  if (settings_.qar_ef && settings_.qar && shape_.nodes > 1) {
    all_reduce_feedback_ = std::make_unique<StepSlots>(*pool_, options.ef_max_bytes, epoch);
  }
  if (settings_.qgz_ef && settings_.qgz && shape_.hierarchical_allowed) {
    feedback_ = std::make_unique<StepSlots>(*pool_, options.ef_max_bytes, epoch);
  }
}

Result Engine::Prepare() {
  ZPP_CHECK(pool_->Prepare(kReservedFenceEvents));
  return hpz_ ? hpz_->Prepare() : ncclSuccess;
}

Result Engine::UsesEnded(bool* ended) {
  ZPP_CHECK(pool_->UsesEnded(ended));
  if (*ended && hpz_) ZPP_CHECK(hpz_->UsesEnded(ended));
  return ncclSuccess;
}

zppPath_t PathOf(const plan::Plan& plan, plan::CollectiveOp op) {
  if (plan.kind == plan::PlanKind::kPassThrough) return zppPathPassThrough;
  if (op == plan::CollectiveOp::kAllReduce) return zppPathQar;
  const bool gather = op == plan::CollectiveOp::kAllGather;
  const bool hierarchical = plan.kind == plan::PlanKind::kHierarchicalAllGather ||
                            plan.kind == plan::PlanKind::kHpzHitAllGather;
  return gather ? (hierarchical ? zppPathHpz : zppPathQwz) : zppPathQgz;
}

namespace {

// A plan as TRACE names it: its kind, and a pass-through's reason.
std::string TracedPlan(const plan::Plan& plan) {
  std::string text(plan::PlanKindName(plan.kind));
  if (plan.kind == plan::PlanKind::kPassThrough) {
    const char* reason = PassThroughReasonName(plan.reason);
    text += std::string(" (") + (reason != nullptr ? reason : "?") + ")";
  }
  return text;
}

// What a call whose staging the pool refused runs instead: NCCL's collective, as planned for it.
plan::Plan PoolPassThrough(const plan::Plan& planned) {
  plan::Plan plan;
  plan.reason = zppReasonPool;
  plan.off_node_bytes = planned.plain_off_node_bytes;
  plan.plain_off_node_bytes = planned.plain_off_node_bytes;
  return plan;
}

}  // namespace

void Engine::Count(const plan::Plan& plan, uint64_t input_bytes, const plan::Call& call) {
  const zppPath_t path = PathOf(plan, call.op);
  stats_.AddPlainOffNode(plan.plain_off_node_bytes);
  if (plan.kind == plan::PlanKind::kPassThrough) {
    stats_.AddPassThrough(plan.reason, input_bytes);
    return;
  }
  stats_.AddCall(path, input_bytes);
}

bool Engine::PoolRefusedFirst(Result result, const LaunchCounts& before) {
  const size_t shortfall = pool_->TakeShortfall();
  if (result == ncclSuccess || shortfall == 0) return false;
  // Every plan takes its buffers before its first collective; a refusal after one would leave
  // this call half done on every rank alike: its error stands (no rank waits for another).
  if (backend_.launches().collectives != before.collectives) return false;
  const auto mib = [](size_t bytes) { return static_cast<unsigned long long>(bytes >> 20); };
  if (!warned_short_) {
    warned_short_ = true;
    ZPP_WARN(
        "zpp: a call's staging (a %llu KiB buffer) does not fit the %llu MiB this communicator "
        "reserved (ZPP_POOL_MB): such calls go to NCCL on every rank (reason 'pool' in "
        "ZPP_STATS); raise ZPP_POOL_MB to run them with zpp",
        static_cast<unsigned long long>(shortfall >> 10), mib(pool_->capacity()));
  } else {
    ZPP_INFO(kExec, "staging of %llu KiB does not fit ZPP_POOL_MB: passed through",
             static_cast<unsigned long long>(shortfall >> 10));
  }
  return true;
}

void Engine::CountLaunches(const plan::Plan& plan, plan::CollectiveOp op,
                           const LaunchCounts& before) {
  const LaunchCounts after = backend_.launches();
  stats_.AddLaunches(PathOf(plan, op), after.kernels - before.kernels,
                     after.collectives - before.collectives);
}

plan::Settings Engine::SettingsFor(const plan::Call& call) const {
  return tuning_ ? tuning_->table.SettingsFor(call) : settings_;
}

plan::Plan Engine::Decide(const plan::Call& call) const {
  const plan::Plan planned = plan::MakePlan(call, shape_, settings_, plan::HpzState{});
  // ZPP_MIN_BYTES and every other reason first: the tuner only chooses among plans that run.
  if (!tuning_ || planned.kind == plan::PlanKind::kPassThrough) return planned;
  plan::Plan tuned = plan::MakePlan(call, shape_, SettingsFor(call), plan::HpzState{});
  if (tuned.kind == plan::PlanKind::kPassThrough) tuned.reason = zppReasonTuned;
  return tuned;
}

Result Engine::AllGather(const AllGatherArgs& args, Stream& stream, plan::Plan* chosen) {
  return AllGather(Decide(CallOf(args)), args, stream, chosen);
}

Result Engine::ReduceScatter(const ReduceScatterArgs& args, Stream& stream, plan::Plan* chosen) {
  return ReduceScatter(Decide(CallOf(args)), args, stream, chosen);
}

Result Engine::AllReduce(const AllReduceArgs& args, Stream& stream, plan::Plan* chosen) {
  return AllReduce(Decide(CallOf(args)), args, stream, chosen);
}

template <typename Args, typename Run>
Result Engine::RunCollective(const char* name, const plan::Plan& plan, const Args& args,
                             uint64_t counted_bytes, Stream& stream, plan::Plan* chosen, Run run) {
  const plan::Call call = CallOf(args);
  ZPP_TRACE(kPlan, "%s count %zu %s: %s", name, args.count, plan::DtypeName(args.dtype).c_str(),
            TracedPlan(plan).c_str());
  const LaunchCounts before = backend_.launches();
  pool_->TakeShortfall();  // only this call's refusal counts
  plan::Plan ran = plan;
  LaunchCounts planned_from = before;
  Result result = run(plan, &ran, &planned_from);
  if (PoolRefusedFirst(result, planned_from)) {
    ran = PoolPassThrough(plan);
    result = run(ran, &ran, &planned_from);
  }
  if constexpr (requires { args.premul_device; }) {
    if (result == ncclSuccess && args.reduction == plan::Reduction::kPreMulSum &&
        args.premul_device != nullptr) {
      // The same scalar on the same bytes on every rank: replicas stay equal.
      result = backend_.ScaleByDeviceScalar({args.recv, args.dtype, args.count}, args.premul_device,
                                            stream);
    }
  }
  if (chosen != nullptr) *chosen = ran;
  Count(ran, counted_bytes, call);
  CountLaunches(ran, call.op, before);
  return result;
}

template <typename Run>
Result Engine::WithFeedback(StepSlots* slots, size_t count, ncclDataType_t dtype, size_t bytes,
                            Run run) {
  if (slots == nullptr) return run(nullptr);
  StepSlots::Slot slot;
  ZPP_CHECK(slots->Take(count, dtype, bytes, &slot));
  stats_.AddFeedback(slot.lease != nullptr);
  const Result result = run(&slot);
  if (result == ncclSuccess) slots->Written(slot);
  return result;
}

Result Engine::AllGather(const plan::Plan& plan, const AllGatherArgs& args, Stream& stream,
                         plan::Plan* chosen) {
  const uint64_t bytes = args.count * plan::DtypeBytes(args.dtype);
  return RunCollective(
      "allgather", plan, args, bytes, stream, chosen,
      [&](const plan::Plan& p, plan::Plan* ran, LaunchCounts* planned_from) -> Result {
        // Hierarchical plans exist only with hpZ on a hierarchy, which is when hpz_ exists: its
        // cache decides between the fill and the intra-node-only hit.
        if (p.kind != plan::PlanKind::kHierarchicalAllGather) return RunAllGather(p, args, stream);
        PlanContext context{backend_, *pool_, stream};
        const Result began = hpz_->BeginCall(context);
        // The epoch's record exchange is whole on every rank: a refusal after it may still pass
        // the call through.
        *planned_from = backend_.launches();
        if (began != ncclSuccess) return began;
        const plan::Call call = CallOf(args);
        return hpz_->AllGather(context, ran, call, shape_, SettingsFor(call), args);
      });
}

Result Engine::ReduceScatter(const plan::Plan& plan, const ReduceScatterArgs& args, Stream& stream,
                             plan::Plan* chosen) {
  const uint64_t bytes = args.count * plan::DtypeBytes(args.dtype) * shape_.world;
  return RunCollective("reducescatter", plan, args, bytes, stream, chosen,
                       [&](const plan::Plan& p, plan::Plan*, LaunchCounts*) {
                         return RunReduceScatter(p, args, stream);
                       });
}

Result Engine::AllReduce(const plan::Plan& plan, const AllReduceArgs& args, Stream& stream,
                         plan::Plan* chosen) {
  const uint64_t bytes = args.count * plan::DtypeBytes(args.dtype);
  return RunCollective("allreduce", plan, args, bytes, stream, chosen,
                       [&](const plan::Plan& p, plan::Plan*, LaunchCounts*) {
                         return RunAllReduce(p, args, stream);
                       });
}

Result Engine::RunAllReduce(const plan::Plan& plan, const AllReduceArgs& args, Stream& stream) {
  // The exact path sums in fp32: other ops and dtypes are the caller's to reduce (NCCL under
  // the plugin, the torch backend's exact path on the CPU).
  if (plan.kind == plan::PlanKind::kPassThrough &&
      (plan.reason == zppReasonRedOp || plan.reason == zppReasonDtype)) {
    ZPP_WARN(
        "zpp all-reduce of %zu x %s: only sum, avg and pre-multiplied sums of fp32, fp16 and "
        "bf16 run here (%s); the call returns ncclInvalidArgument: reduce it outside zpp",
        args.count, plan::DtypeName(args.dtype).c_str(), PassThroughReasonName(plan.reason));
    return ncclInvalidArgument;
  }
  PlanContext context{backend_, *pool_, stream};
  if (plan.kind != plan::PlanKind::kQarHierarchicalAllReduce &&
      plan.kind != plan::PlanKind::kQarFlatAllReduce) {
    return RunPlainAllReduce(context, args);
  }
  return WithFeedback(all_reduce_feedback_.get(), args.count, args.dtype,
                      QarFeedbackBytes(plan, args, shape_.nodes, shape_.world),
                      [&](const StepSlots::Slot* slot) {
                        return RunQarHierarchicalAllReduce(context, plan, args, slot);
                      });
}

Result Engine::RunAllGather(const plan::Plan& plan, const AllGatherArgs& args, Stream& stream) {
  PlanContext context{backend_, *pool_, stream};
  switch (plan.kind) {
    case plan::PlanKind::kQwzFlatAllGather:
      return RunQwzFlatAllGather(context, plan, args);
    default:
      return backend_.AllGather(args.send, args.recv, args.count * NcclTypeBytes(args.dtype),
                                GroupKind::kWorld, stream);
  }
}

Result Engine::RunReduceScatter(const plan::Plan& plan, const ReduceScatterArgs& args,
                                Stream& stream) {
  PlanContext context{backend_, *pool_, stream};
  switch (plan.kind) {
    case plan::PlanKind::kQgzFlatReduceScatter:
      return RunQgzFlatReduceScatter(context, plan, args);
    case plan::PlanKind::kQgzHierarchicalReduceScatter:
      return WithFeedback(feedback_.get(), args.count, args.dtype,
                          FeedbackBytes(plan, args, shape_.nodes),
                          [&](const StepSlots::Slot* slot) {
                            return RunQgzHierarchicalReduceScatter(context, plan, args, slot);
                          });
    case plan::PlanKind::kQgzThreeLevelReduceScatter:
      return RunQgzThreeLevelReduceScatter(context, plan, args);
    default:
      return backend_.ReduceScatter(args.send, args.recv, args.count, args.dtype,
                                    ScaleAfterSum(args, shape_.world), GroupKind::kWorld, stream);
  }
}

}  // namespace zpp::engine
