// hpZ's kept secondary partitions and the pairing that reuses them (docs/architecture.md,
// "hpZ's pairing", contract 7).
//
// Invariants:
// - A backward-pass all-gather is a hit only on a kept fill of the same (count, dtype) made by
//   a forward-pass gather of the same step epoch: the latest such fill not yet paired (the
//   backward gathers a step's layers in reverse). Every other gather is a full hierarchical
//   gather; one of unknown pass is never kept nor reused. A forward pass after a backward pass
//   starts afresh.
// - Within ZPP_HPZ_MAX_MB and the pool, the first forward fills are kept, the newest are not.
// - Every input of that decision (the call's pass, count and dtype, and what was kept, which
//   depends only on sizes and the agreed pool) is the same on every rank: no host wait.
// - The device verifies every hit by content: it sends the partition of the first candidate
//   whose shard fingerprint equals this rank's shard now, or NaN bytes and counts a failure.
//   The step guard (zppHpzChecks) skips the optimizer step of a failure on every rank.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/collective_args.h"
#include "engine/plan_context.h"
#include "engine/weight_deltas.h"
#include "fence/buffer_pool.h"
#include "plan/plan.h"
#include "stats/stats.h"

namespace zpp::engine {

class HpzCache {
 public:
  // `epoch` returns the current step epoch (the process's, or a simulated rank's).
  HpzCache(Backend& backend, uint64_t max_bytes, StatsCounters& stats,
           std::function<uint64_t()> epoch);

  // At communicator set-up, where the ranks agree on the outcome: what hpZ needs that can fail
  // (its host-visible counters, its exchange's event). Without it the first epoch makes them.
  Result Prepare();

  // First, for every all-gather whose plan is hierarchical: starts the step epoch when it changed,
  // with the previous epoch's record exchange, a collective every rank makes at the same call.
  Result BeginCall(PlanContext& context);

  // Then pairs, runs that all-gather; `plan` becomes the plan that ran (a hit or a fill).
  Result AllGather(PlanContext& context, plan::Plan* plan, const plan::Call& call,
                   const plan::Shape& shape, const plan::Settings& settings,
                   const AllGatherArgs& args);

  // Whether the device work hpZ enqueued outside its buffers' fences (the epoch exchange's
  // record) has run, without waiting.
  Result UsesEnded(bool* ended);

  // Reports (WARN, stats) verification failures the device has counted since the last look.
  void PollFailures();

  // The device's cumulative counters: failed checks and the hits' choice sum (zppHpzChecks).
  void ReadChecks(uint64_t* failures, uint64_t* choices) const;

  uint64_t kept_bytes() const;

  // ZPP_QWZ_DELTA: the fills of delta plans run through `deltas` (engine/weight_deltas.h), which
  // count their verification failures with the hits' and stop after a reported failure.
  void set_weight_deltas(WeightDeltas* deltas) { deltas_ = deltas; }

 private:
  using CallShape = std::pair<uint64_t, int>;  // (count, dtype)
  struct KeptFill {
    BufferLease lease;  // the secondary partition
    CallShape shape;
  };

  Result StartEpoch(PlanContext& context, uint64_t epoch);
  Result ReadPreviousRecord();
  Result ExchangeRecord(PlanContext& context);
  // The forward fill a backward gather of `shape` pairs with (-1: none kept, a full gather).
  int PairedFill(const CallShape& shape);
  Result KeepFill(PlanContext& context, const CallShape& shape, size_t secondary_bytes,
                  KeptFill* fill);
  // What a hit paired with `root` may send: kept fills of its shape, `root` first.
  codec::HpzCandidates Candidates(int root, const CallShape& shape) const;
  // Pairs this call (updates the pass and the stacks): the kept fill it reuses, or -1.
  int Pair(const AllGatherArgs& args, bool slot);
  Result RunHit(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args,
                int position, int root);
  Result RunFill(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args,
                 int position, bool slot);
  uint32_t* Counters() const;
  uint64_t* FingerprintSlot(int position) const;

  Backend& backend_;
  const uint64_t max_bytes_;
  StatsCounters& stats_;
  std::function<uint64_t()> epoch_source_;
  WeightDeltas* deltas_ = nullptr;

  // This epoch.
  bool started_ = false;
  uint64_t epoch_ = 0;
  int calls_ = 0;                 // hierarchical all-gathers so far
  uint64_t decisions_hash_ = 0;   // every call's pass, shape and hit: compared across ranks
  BufferLease fingerprints_;      // per call, device memory, fenced
  size_t capacity_ = 0;           // calls fingerprints_ has room for
  std::map<int, KeptFill> kept_;  // by the fill's call index
  // Forward fills not yet paired, per shape, latest last; a fill not kept stays as a marker so
  // that its backward gather pairs with nothing rather than with an older layer's fill.
  std::map<CallShape, std::vector<int>> unpaired_;
  TrainingPass last_pass_ = TrainingPass::kUnknown;

  bool deltas_off_ = false;  // a failure was reported: deltas send in full from then on
  bool warned_disagreement_ = false;

  // The hits' counters (codec::kHpzFailuresCounter, kHpzChoicesCounter): cumulative,
  // host-visible, written by the device.
  std::unique_ptr<DeviceMemory> counters_;
  uint32_t failures_reported_ = 0;
  // The epoch record exchange: from the pool (agreed memory).
  BufferLease record_send_;
  BufferLease records_;  // every rank's record
  std::unique_ptr<Event> exchange_done_;
  bool exchange_pending_ = false;
  std::vector<uint32_t> reported_failures_;  // each rank's cumulative count at the last record
  uint64_t exchanged_epoch_ = 0;
};

}  // namespace zpp::engine
