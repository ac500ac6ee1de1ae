// hpZ's secondary partitions and the agreed decision to reuse them (docs/architecture.md,
// contract 7).
//
// A secondary partition (the output of a hierarchical all-gather's inter-node stage) can be
// kept so that a later all-gather of the same weights in the same step epoch runs its
// intra-node stage only (a hit). Which earlier call a call may reuse comes from the shard's
// *content*, never its address: FSDP2 gathers in place into a fresh allocation every call and
// DeepSpeed from fresh flat buffers, so one address carries many layers in a step and one layer
// many addresses.
//
// Per epoch, every hierarchical all-gather writes the fingerprint of its input shard (count x
// element size bytes, on the device) into its position's slot. At the next epoch advance the
// device derives the epoch's *content pattern* from those slots (call i reuses the latest
// earlier call j with the same fingerprint; codec/reuse_pattern.h) and its hash, bound to the
// host's list of (count, dtype) per position; the ranks all-gather a 16-byte record (hash,
// verification failures, the hits' choice sum, below) and read it, with the pattern, one epoch
// later, after an event that completed long before: the only host wait, one per epoch, and reuse
// starts in the third epoch. Nothing ever waits for a fingerprint on the collective path. (Reading
// the fingerprints themselves to the host takes the same one-epoch delay and the agreement another:
// reuse would start an epoch later; so the device derives the pattern and the host reads it with
// the record.)
//
// Every rank then follows the *agreed pattern* by position: the one all ranks derived
// identically, with no verification failure anywhere. Identical shards of different layers are
// fine within an epoch: when every rank sees the same equalities, reusing either partition gives
// the same bytes; when ranks differ, the hashes differ and reuse pauses. But the pattern is
// followed two epochs after it was seen, and layers equal by coincidence may differ by then: a
// shard that does not vary (all its 8-byte words alike: LayerNorm weights all ones, zero biases,
// which in bf16 stay exactly 1.0 on every layer until the fp32 master moves one of them, at any
// step) is never reused nor reused from (FingerprintMayReuse): its gathers run in full. Without
// that, DeepSpeed (one all-gather per parameter) with ZPP_MIN_BYTES=0 planned the forward gather
// of every LayerNorm weight as a hit on the first one, and the step where one of them moved
// failed verification and turned reuse off for good. Varying shards of different layers equal
// for a while and then not still fail so, loudly: a model built from copies of one layer, until
// its first step, or LayerNorm weights of two layers with the same few elements moved (seen under
// DeepSpeed on one rank of four: the ranks' patterns differed, and reuse paused). A call whose
// (count, dtype) differs from the agreed one at its position, or a call past the agreed length,
// *departs*: the rest of the epoch runs full hierarchical gathers, and reuse resumes when a later
// epoch's pattern is agreed (a changed call sequence is normal).
//
// Whether a call is a hit is the host's decision (the agreed pattern, by position); *which*
// partition a hit sends is the device's. A change that keeps every (count, dtype) in place (layers
// of one size, a backward gather left out or one more) cannot be seen on the host before the
// hit, so the host hands the hit every kept fill of its (count, dtype) (at most
// codec::kMaxHpzCandidates, as a kernel argument: it captures): the planned one, then the others
// nearest to it. The device fingerprints the rank's shard (as every call does) and copies into
// the intra-node gather's send buffer the partition of the first candidate whose fingerprint
// equals it; when none does, it sends NaN bytes and counts a failure (Backend::SelectPartition).
// Nothing on the host depends on the choice (contract 3). Ranks choose alike when their shards
// show the same equalities, which a shifted sequence keeps; each hit adds its choice to a sum
// that travels in the epoch record, and ranks whose sums differ (shards equal across layers on
// some ranks only, while the sequence shifted) are reported like a failure.
//
// Every hit is verified this way: the shard must equal a kept fill's, or its partition is NaN.
// The failures go into the next record, and once any rank reports one, reuse goes off for good on
// every rank with a WARN. A rank verifies only its own shard: weights changed on every rank
// without an epoch advance give NaN on every rank on the spot; a shard changed on one rank only
// gives NaN on every rank of its node (the rank sends NaN in place of its partition), while
// ranks of other nodes receive its old shard in that gather (their partitions hold it); every
// rank reports it (WARN naming the rank) when that epoch's record is read, two advances later,
// and reuse is then off (telling them on the spot would put a collective across nodes into every
// hit, which hpZ exists to avoid). A hit whose layer was not gathered earlier in the epoch (a
// forward gather left out, among layers of one size) looks the same as a changed shard: NaN.
//
// Fingerprints are 64-bit (codec/math/fingerprint_math.h, a sum of mixed words: not cryptographic,
// so shards crafted to collide are out of scope): two different shards collide with probability
// about 2^-64 = 5e-20. A collision on one rank only makes the ranks' patterns differ (reuse
// pauses); a wrong agreed reuse needs the same collision on every rank at once, about 2^-64 per
// rank multiplied. A changed shard goes unseen only if its hit collides: 5e-20 per such hit, so
// 10^4 gathers per epoch over 10^6 epochs, all of them changed, would miss one with probability
// 5e-10.
// The choice sums are 32-bit: ranks that chose differently go unreported with probability 2^-32,
// and they choose differently only when the fingerprints of that epoch show different equalities
// on different ranks.
//
// Memory: a fill is kept when a later agreed hit has its (count, dtype), until the epoch ends (a
// shifted sequence may read it after its planned last reuse); in a training step that is every
// forward gather of a resharded layer, as before, only held to the end of the backward instead of
// dropped one by one. Kept partitions are bounded by `max_bytes` (ZPP_HPZ_MAX_MB); when full,
// fills the agreed pattern does not reuse go first, then the oldest, on every rank alike (same
// sizes, same agreed pattern). They come from the engine's pool, carved from the reservation the
// ranks agreed on (ZPP_POOL_MB): a partition the pool cannot give is not kept, on every rank
// alike, and its would-be hits run full gathers. A hit sends a copy of the chosen partition (the
// gather's send buffer is fixed when it is enqueued): one partition's bytes, 1/(ranks per node)
// of what its intra-node gather moves.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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
  // (its host-visible counters, its exchange's event), so that no collective creates it (a
  // failure there would be one rank's, with the others waiting in the exchange). Without it the
  // first epoch makes them (tests that drive an Engine directly).
  Result Prepare();

  // First, for every all-gather whose plan is hierarchical: starts the step epoch when it changed,
  // with its record exchange, a collective of its own that every rank makes at the same call.
  // A buffer the pool refuses in AllGather after it still passes the call through.
  Result BeginCall(PlanContext& context);

  // Then decides and runs that all-gather; `plan` becomes the plan that ran (a hit or the fill).
  Result AllGather(PlanContext& context, plan::Plan* plan, const plan::Call& call,
                   const plan::Shape& shape, const plan::Settings& settings,
                   const AllGatherArgs& args);

  // Whether the device work hpZ enqueued outside its buffers' fences (the epoch exchange's
  // record) has run, without waiting.
  Result UsesEnded(bool* ended);

  // Reports (WARN, stats) verification failures the device has counted since the last look.
  void PollFailures();

  // An agreed pattern is being followed (reuse on, not paused).
  bool reuse_trusted() const { return trusted_; }
  // Off for good after a verification failure on any rank.
  bool reuse_disabled() const { return disabled_; }
  uint64_t kept_bytes() const;

  // ZPP_QWZ_DELTA: the fills of delta plans run through `deltas` (engine/weight_deltas.h), which
  // count their verification failures with the hits' and stop when reuse is off.
  void set_weight_deltas(WeightDeltas* deltas) { deltas_ = deltas; }

 private:
  struct CallShape {
    uint64_t count = 0;
    int dtype = 0;
    bool operator==(const CallShape&) const = default;
  };
  struct Entry {
    BufferLease lease;  // the secondary partition
    CallShape shape;
    bool planned = false;  // the agreed pattern reuses it (dropped last when memory is short)
  };
  // What every rank follows while trusted, per position of the epoch.
  struct AgreedPattern {
    std::vector<CallShape> shapes;
    std::vector<int> root;     // the fill whose partition serves this call, -1 for a fill
    std::vector<bool> reused;  // a fill that a later call reuses
    std::vector<bool> keep;    // a fill that a later hit of its (count, dtype) may need
  };

  Result StartEpoch(PlanContext& context, uint64_t epoch);
  Result HarvestAgreement();
  Result ExchangeRecord(PlanContext& context);
  AgreedPattern BuildAgreed(const std::vector<int32_t>& pattern) const;
  // The kept fill whose partition call `position` reuses, or -1 (a fill); notes a departure.
  int PlannedRoot(int position, const CallShape& call);
  void MakeRoom(size_t bytes);
  // What a hit planned on `root` may send: kept fills of its (count, dtype), `root` first.
  codec::HpzCandidates Candidates(int root, const CallShape& call) const;
  uint32_t* Counters() const;
  uint64_t ShapesHash(const std::vector<CallShape>& shapes) const;
  uint64_t* FingerprintSlot(int position) const;

  Backend& backend_;
  const uint64_t max_bytes_;
  StatsCounters& stats_;
  std::function<uint64_t()> epoch_source_;
  WeightDeltas* deltas_ = nullptr;

  // This epoch.
  bool started_ = false;
  uint64_t epoch_ = 0;
  std::vector<CallShape> shapes_;  // per position
  BufferLease fingerprints_;       // per position, device memory, fenced
  size_t capacity_ = 0;            // positions fingerprints_ has room for
  bool departed_ = false;
  std::map<int, Entry> entries_;  // kept partitions by fill position

  // Agreement.
  bool trusted_ = false;
  bool disabled_ = false;
  bool warned_disagreement_ = false;
  AgreedPattern agreed_;

  // The hits' counters (codec::kHpzFailuresCounter, kHpzChoicesCounter): cumulative,
  // host-visible.
  std::unique_ptr<DeviceMemory> counters_;
  uint32_t failures_reported_ = 0;
  // From the pool (agreed memory), as everything hpZ allocates on the collective path except
  // the host-visible counter above.
  BufferLease exchange_send_;  // this rank's record
  BufferLease harvest_;        // all ranks' records, then the pattern
  size_t harvest_pattern_capacity_ = 0;
  std::unique_ptr<Event> exchange_done_;
  bool exchange_pending_ = false;
  std::vector<CallShape> exchanged_shapes_;
  uint32_t exchanged_pattern_calls_ = 0;  // pattern entries the device derived
  uint64_t exchanged_epoch_ = 0;
};

}  // namespace zpp::engine
