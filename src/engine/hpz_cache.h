// hpZ's secondary partitions and the agreed decision to reuse them (DESIGN.md, contract 7).
//
// A secondary partition (the output of a hierarchical all-gather's inter-node stage) is kept,
// per call position in the step epoch, so that a later all-gather of the same weights in the
// same epoch runs its intra-node stage only. Whether call i reuses the partition of call j is
// never decided from a rank-local pointer: every rank follows the *agreed pattern*, the list of
// (i -> j) reuses that all ranks observed identically in an earlier epoch, with no verification
// failure in it. Each rank derives its own would-be pattern from (pointer, count, dtype) keys;
// at each epoch advance the ranks exchange a hash of it and their failure count (16 bytes per
// rank), and read the exchange one epoch later, when it has long completed: so reuse starts in
// the third epoch, and stops for good on every rank after a disagreement or a failure.
//
// Every reuse is checked on the device: the fingerprint of the rank's current shard must equal
// the one taken when the partition was filled, or the output is filled with NaN and counted. A
// would-be reuse that is not taken (the first epochs, or reuse off) is checked the same way
// without poisoning, so misuse shows up before any reuse: weights updated without advancing the
// epoch, one all-gather input buffer reused for several layers, ranks whose pointers differ.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "engine/collective_args.h"
#include "engine/plan_context.h"
#include "fence/buffer_pool.h"
#include "plan/plan.h"
#include "stats/stats.h"

namespace zpp::engine {

class HpzCache {
 public:
  // `epoch` returns the current step epoch (the process's, or a simulated rank's).
  HpzCache(Backend& backend, uint64_t max_bytes, StatsCounters& stats,
           std::function<uint64_t()> epoch);

  // Decides and runs one all-gather whose plan is hierarchical; `plan` becomes the plan that
  // ran (a hit or the fill).
  Result AllGather(PlanContext& context, plan::Plan* plan, const plan::Call& call,
                   const plan::Shape& shape, const plan::Settings& settings,
                   const AllGatherArgs& args);

  // Reports (WARN, stats) verification failures the device has counted since the last look.
  void PollFailures();

  bool reuse_trusted() const { return trusted_; }
  bool reuse_disabled() const { return disabled_; }
  uint64_t kept_bytes() const;

 private:
  struct Entry {
    BufferLease lease;  // secondary partition, then its fill fingerprint (8 bytes)
    size_t secondary_bytes = 0;
    uint64_t count = 0;
    ncclDataType_t dtype = ncclFloat32;
    uint64_t* fingerprint() const;
  };
  using LocalKey = std::tuple<const void*, uint64_t, int>;

  Result StartEpoch(Stream& stream, uint64_t epoch);
  Result HarvestAgreement();
  Result ExchangeRecord(Stream& stream);
  void MakeRoom(size_t bytes);
  uint64_t PatternHash() const;

  Backend& backend_;
  const uint64_t max_bytes_;
  StatsCounters& stats_;
  std::function<uint64_t()> epoch_source_;

  bool started_ = false;
  uint64_t epoch_ = 0;
  std::map<int, Entry> entries_;       // by fill position, this epoch
  std::map<LocalKey, int> last_fill_;  // this rank's key -> latest fill position, this epoch
  std::vector<int> pattern_;           // this epoch: the would-be source of each position
  std::vector<std::pair<uint64_t, int>> shapes_;  // this epoch: (count, dtype) per position

  bool trusted_ = false;
  bool disabled_ = false;
  std::vector<int> agreed_;  // the pattern every rank follows while trusted

  std::unique_ptr<DeviceMemory> failures_;  // device counter for this epoch, host-visible
  uint32_t failures_reported_ = 0;
  std::unique_ptr<DeviceMemory> exchange_send_;
  std::unique_ptr<DeviceMemory> exchange_recv_;
  std::unique_ptr<Event> exchange_done_;
  bool exchange_pending_ = false;
  std::vector<int> exchanged_pattern_;
  uint64_t exchanged_epoch_ = 0;
};

}  // namespace zpp::engine
