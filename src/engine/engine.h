// One communicator's zpp: plans each call from agreed state and runs the plan on the backend,
// or runs the plain collective when the plan says pass through. The plugin wraps one of these
// per NCCL communicator; the tests and the demo, one per simulated rank.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "backend/backend.h"
#include "engine/collective_args.h"
#include "engine/hpz_cache.h"
#include "engine/step_slots.h"
#include "fence/buffer_pool.h"
#include "plan/plan.h"
#include "stats/stats.h"
#include "tune/decision_table.h"

namespace zpp {
struct Config;
}

namespace zpp::engine {

struct EngineOptions {
  plan::Settings settings;
  bool fence_enabled = true;                    // ZPP_FENCE
  uint64_t hpz_max_bytes = uint64_t{1} << 30;   // ZPP_HPZ_MAX_MB
  uint64_t pool_bytes = uint64_t{2} << 30;      // ZPP_POOL_MB: what set-up reserves
  uint64_t ef_max_bytes = uint64_t{256} << 20;  // ZPP_EF_MAX_MB
  uint64_t delta_refresh = 100;                 // ZPP_QWZ_DELTA_REFRESH
  // The step epoch; by default the process's (zppStepEpochAdvance).
  std::function<uint64_t()> epoch;
  bool tune = false;  // ZPP_TUNE=auto: set-up calibrates and fills `tuning`
  // ZPP_TUNE=auto: the agreed figures and the decision table built from them at set-up; null:
  // every eligible call takes its plan (the static rule).
  std::shared_ptr<const tune::Tuning> tuning;
};

// The stats' path of a plan that ran.
zppPath_t PathOf(const plan::Plan& plan, plan::CollectiveOp op);

// The options the process configuration gives (ZPP_QWZ..., ZPP_FENCE, ZPP_HPZ_MAX_MB,
// ZPP_POOL_MB).
EngineOptions OptionsFrom(const Config& config);

class Engine {
 public:
  // `pool`: the staging pool, bounded by the reservation the ranks agreed on at set-up
  // (engine/pool_reservation.h); without one, an on-demand pool (the CPU backend, tests).
  Engine(Backend& backend, const plan::Shape& shape, const EngineOptions& options,
         StatsCounters& stats, std::unique_ptr<BufferPool> pool = nullptr);

  // NCCL's semantics; `chosen`, when given, receives the plan that ran.
  Result AllGather(const AllGatherArgs& args, Stream& stream, plan::Plan* chosen = nullptr);
  Result ReduceScatter(const ReduceScatterArgs& args, Stream& stream, plan::Plan* chosen = nullptr);
  // fp32, fp16 and bf16 sums (avg, pre-multiplied): a pass-through runs the exact all-reduce of
  // the backend's collectives (the plugin forwards its pass-throughs to NCCL instead).
  Result AllReduce(const AllReduceArgs& args, Stream& stream, plan::Plan* chosen = nullptr);

  // The plan a call gets on this engine, and the calls run with it: a caller that has to know
  // the plan first (the plugin forwards pass-throughs unchanged) plans once per call.
  plan::Plan Decide(const plan::Call& call) const;
  Result AllGather(const plan::Plan& plan, const AllGatherArgs& args, Stream& stream,
                   plan::Plan* chosen = nullptr);
  Result ReduceScatter(const plan::Plan& plan, const ReduceScatterArgs& args, Stream& stream,
                       plan::Plan* chosen = nullptr);
  Result AllReduce(const plan::Plan& plan, const AllReduceArgs& args, Stream& stream,
                   plan::Plan* chosen = nullptr);

  const plan::Shape& shape() const { return shape_; }
  // At communicator set-up, before the ranks agree on the outcome: whatever the collective path
  // would otherwise create on first use and could fail there (the fences' events, hpZ's
  // counters and event).
  Result Prepare();
  // Fence events made at set-up: a buffer's write and each stream reading it since take one
  // while they matter. A model of 80 layers under hpZ keeps about 80 partitions (a write and
  // one or two reads each) and a few dozen staging buffers; past the reserve, uses are ordered
  // through one shared event (fence/fence_events.h). CUDA events cost about a microsecond each
  // to make and no device memory.
  static constexpr size_t kReservedFenceEvents = 1024;
  // ZPP_TUNE=auto's next table (at an epoch advance, on every rank at the same call).
  void SetTuning(std::shared_ptr<const tune::Tuning> tuning) { tuning_ = std::move(tuning); }
  const tune::Tuning* tuning() const { return tuning_.get(); }
  BufferPool& pool() { return *pool_; }
  // Whether every device use of the engine's memory has run, without waiting: after an abort,
  // the memory can then be freed with no wait on the device.
  Result UsesEnded(bool* ended);
  const HpzCache* hpz() const { return hpz_.get(); }
  const StepSlots* feedback() const { return feedback_.get(); }
  WeightDeltas* deltas_for_testing() { return deltas_.get(); }
  // Reports errors the device counted since the last call (each call also does).
  void PollDeviceErrors() {
    if (hpz_) hpz_->PollFailures();
  }
  // hpZ's cumulative device counters (HpzCache::ReadChecks); false (and zeros) without hpZ.
  bool ReadHpzChecks(uint64_t* failures, uint64_t* choices) const {
    *failures = *choices = 0;
    if (hpz_) hpz_->ReadChecks(failures, choices);
    return hpz_ != nullptr;
  }

 private:
  // One collective's run, whichever it is: `run(plan, &ran, &planned_from)` enqueues `plan` (and
  // may change `ran`, or move `planned_from` past work a refusal may follow); the skeleton traces,
  // falls back to a pass-through when the pool refused a buffer first, applies a device
  // pre-multiplier, and counts the call and its launches.
  template <typename Args, typename Run>
  Result RunCollective(const char* name, const plan::Plan& plan, const Args& args,
                       uint64_t counted_bytes, Stream& stream, plan::Plan* chosen, Run run);
  // `run(slot)` with the call's error-feedback slot taken from `slots` (its lease may be null:
  // over ZPP_EF_MAX_MB), and the slot marked written when it succeeded; `run(nullptr)` without
  // `slots`.
  template <typename Run>
  Result WithFeedback(StepSlots* slots, size_t count, ncclDataType_t dtype, size_t bytes, Run run);
  Result RunAllGather(const plan::Plan& plan, const AllGatherArgs& args, Stream& stream);
  Result RunReduceScatter(const plan::Plan& plan, const ReduceScatterArgs& args, Stream& stream);
  Result RunAllReduce(const plan::Plan& plan, const AllReduceArgs& args, Stream& stream);
  void Count(const plan::Plan& plan, uint64_t input_bytes, const plan::Call& call);
  // Whether a run that returned `result` failed only because the bounded pool refused a buffer
  // before any collective was enqueued (since `before`): then it passes through.
  bool PoolRefusedFirst(Result result, const LaunchCounts& before);
  // The settings a call runs with: the user's, as the tuner chose them for its size.
  plan::Settings SettingsFor(const plan::Call& call) const;
  // What the plan's run enqueued since `before`, into its path's launch counts.
  void CountLaunches(const plan::Plan& plan, plan::CollectiveOp op, const LaunchCounts& before);

  Backend& backend_;
  const plan::Shape shape_;
  const plan::Settings settings_;
  std::shared_ptr<const tune::Tuning> tuning_;
  std::unique_ptr<BufferPool> pool_;
  StatsCounters& stats_;
  bool warned_short_ = false;
  std::unique_ptr<HpzCache> hpz_;                   // with hpZ on a hierarchy
  std::unique_ptr<StepSlots> feedback_;             // ZPP_QGZ_EF, where the backend has it
  std::unique_ptr<StepSlots> all_reduce_feedback_;  // ZPP_QAR_EF, where the backend has it
  std::unique_ptr<WeightDeltas> deltas_;  // ZPP_QWZ_DELTA, with hpz_, where the backend has it
};

}  // namespace zpp::engine
