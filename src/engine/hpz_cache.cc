#include "engine/hpz_cache.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "common/hash.h"
#include "engine/allgather_plans.h"
#include "log/log.h"
#include "plan/planner.h"

namespace zpp::engine {
namespace {

// What each rank tells the others about an epoch.
struct EpochRecord {
  uint64_t decisions_hash;  // written on the device (Backend::ReusePattern's seed term)
  // Copied on the device from the hit counters (codec::kHpzFailuresCounter, then
  // kHpzChoicesCounter), both cumulative: the failures, and the sum of the hits' choices.
  uint32_t failures;
  uint32_t choices;
};
static_assert(sizeof(EpochRecord) == 16);
static_assert(offsetof(EpochRecord, choices) == offsetof(EpochRecord, failures) + 4 &&
              codec::kHpzChoicesCounter == codec::kHpzFailuresCounter + 1);

// Fingerprint slots an epoch starts with; the next epoch gets twice the calls of the last.
constexpr size_t kMinSlots = 256;

size_t ShardBytes(const AllGatherArgs& args) { return args.count * plan::DtypeBytes(args.dtype); }

// Appends `rank` to a comma-separated list.
void AddRank(std::string& list, int rank) {
  if (!list.empty()) list.push_back(',');
  list.append(std::to_string(rank));
}

// The choice sum most ranks reported (rank 0's on a tie): the odd ones out are named.
uint32_t MostCommonChoices(const std::vector<EpochRecord>& records) {
  uint32_t best = records[0].choices;
  size_t best_count = 0;
  for (const EpochRecord& candidate : records) {
    const auto count = static_cast<size_t>(
        std::count_if(records.begin(), records.end(),
                      [&](const EpochRecord& r) { return r.choices == candidate.choices; }));
    if (count > best_count) {
      best = candidate.choices;
      best_count = count;
    }
  }
  return best;
}

}  // namespace

HpzCache::HpzCache(Backend& backend, uint64_t max_bytes, StatsCounters& stats,
                   std::function<uint64_t()> epoch)
    : backend_(backend), max_bytes_(max_bytes), stats_(stats), epoch_source_(std::move(epoch)) {}

uint64_t HpzCache::kept_bytes() const {
  uint64_t total = 0;
  for (const auto& [position, fill] : kept_) total += fill.lease.size();
  return total;
}

uint64_t* HpzCache::FingerprintSlot(int position) const {
  return static_cast<uint64_t*>(fingerprints_.data()) + position;
}

uint32_t* HpzCache::Counters() const { return static_cast<uint32_t*>(counters_->data()); }

void HpzCache::ReadChecks(uint64_t* failures, uint64_t* choices) const {
  *failures = *choices = 0;
  if (!counters_) return;
  *failures = std::atomic_ref<uint32_t>(Counters()[codec::kHpzFailuresCounter])
                  .load(std::memory_order_relaxed);
  *choices = std::atomic_ref<uint32_t>(Counters()[codec::kHpzChoicesCounter])
                 .load(std::memory_order_relaxed);
}

void HpzCache::PollFailures() {
  uint64_t now = 0, choices = 0;
  ReadChecks(&now, &choices);
  if (now <= failures_reported_) return;
  const auto fresh = static_cast<uint32_t>(now - failures_reported_);
  stats_.AddHpzVerifyFailures(fresh);
  failures_reported_ = static_cast<uint32_t>(now);
  ZPP_WARN(
      "hpZ: %u check(s) failed on this rank in step epoch %llu: a backward all-gather found this "
      "rank's shard equal to none of the forward gathers kept in the step (a weight changed in "
      "place between its forward and its backward%s); its node received NaN in that gather, and "
      "the step guard skips this optimizer step on every rank",
      fresh, static_cast<unsigned long long>(epoch_),
      deltas_ != nullptr ? ", or a weight delta's reference differed" : "");
}

Result HpzCache::ReadPreviousRecord() {
  if (!exchange_pending_) return ncclSuccess;
  exchange_pending_ = false;
  const int ranks = backend_.world_size();
  std::vector<EpochRecord> records(ranks);
  reported_failures_.resize(ranks, 0);
  ZPP_CHECK(backend_.ReadAfter(*exchange_done_, records.data(), records_.data(),
                               ranks * sizeof(EpochRecord)));
  stats_.AddHostWait();  // the one host wait on the collective path (zppStats_t::host_waits)
  bool same_decisions = true;
  std::string failing_ranks, other_choices;
  const uint32_t usual_choices = MostCommonChoices(records);
  for (int r = 0; r < ranks; ++r) {
    same_decisions &= records[r].decisions_hash == records[0].decisions_hash;
    if (records[r].failures != reported_failures_[r]) AddRank(failing_ranks, r);
    reported_failures_[r] = records[r].failures;
    if (records[r].choices != usual_choices) AddRank(other_choices, r);
  }
  const auto epoch = static_cast<unsigned long long>(exchanged_epoch_);
  if (!failing_ranks.empty()) {
    // Every rank hears of it, those of other nodes included: they received the old shard.
    ZPP_WARN(
        "hpZ: checks failed by step epoch %llu on rank(s) %s: their nodes received NaN and "
        "other nodes their old shards in those gathers; the step guard skips such a step "
        "on every rank%s",
        epoch, failing_ranks.c_str(),
        deltas_ != nullptr && !deltas_off_
            ? "; weight deltas (ZPP_QWZ_DELTA) send in full from now on"
            : "");
    if (deltas_ != nullptr) deltas_off_ = true;
  }
  if ((!same_decisions || !other_choices.empty()) && !warned_disagreement_) {
    warned_disagreement_ = true;
    ZPP_WARN(
        "hpZ: by step epoch %llu the ranks %s (rank(s) %s): a framework whose ranks issue "
        "different gathers, or shards equal across layers on some ranks only; gathers may "
        "have held stale shards (the step guard skips only steps whose checks failed)",
        epoch,
        same_decisions ? "chose different kept fills in the same hits"
                       : "paired their all-gathers differently",
        other_choices.empty() ? "all" : other_choices.c_str());
  }
  return ncclSuccess;
}

Result HpzCache::ExchangeRecord(PlanContext& context) {
  Stream& stream = context.stream;
  const int ranks = backend_.world_size();
  // Buffers before the exchange is enqueued, from the pool: a refusal is every rank's alike.
  if (!record_send_) ZPP_CHECK(context.pool.Take(sizeof(EpochRecord), &record_send_));
  if (!records_) ZPP_CHECK(context.pool.Take(ranks * sizeof(EpochRecord), &records_));
  auto* send = static_cast<std::byte*>(record_send_.data());
  // Written under their fences' exclusive side: the pool may have handed them from another user
  // on another stream, which the host's read of the previous exchange does not order.
  ZPP_CHECK(record_send_.fence().BeginWrite(stream));
  ZPP_CHECK(records_.fence().BeginWrite(stream));
  // The fingerprints' exclusive side: after every call's slot and every hit's choice, on every
  // stream, so the counters copied below hold the whole epoch's.
  ZPP_CHECK(fingerprints_.fence().BeginWrite(stream));
  ZPP_CHECK(backend_.ReusePattern(nullptr, 0, decisions_hash_, nullptr,
                                  reinterpret_cast<uint64_t*>(send), stream));
  ZPP_CHECK(fingerprints_.fence().EndWrite(stream));
  ZPP_CHECK(backend_.Memcpy(send + offsetof(EpochRecord, failures),
                            Counters() + codec::kHpzFailuresCounter, 2 * sizeof(uint32_t), stream));
  ZPP_CHECK(
      backend_.AllGather(send, records_.data(), sizeof(EpochRecord), GroupKind::kWorld, stream));
  ZPP_CHECK(record_send_.fence().EndWrite(stream));
  ZPP_CHECK(records_.fence().EndWrite(stream));
  ZPP_CHECK(backend_.RecordEvent(*exchange_done_, stream));
  exchange_pending_ = true;
  exchanged_epoch_ = epoch_;
  return ncclSuccess;
}

Result HpzCache::UsesEnded(bool* ended) {
  *ended = true;
  return exchange_done_ ? backend_.EventReached(*exchange_done_, ended) : ncclSuccess;
}

Result HpzCache::Prepare() {
  if (!counters_) {
    ZPP_CHECK(backend_.AllocateHostVisible(2 * sizeof(uint32_t), &counters_));
    std::memset(counters_->data(), 0, 2 * sizeof(uint32_t));  // no device work has it yet
  }
  if (!exchange_done_) ZPP_CHECK(backend_.CreateEvent(&exchange_done_));
  return ncclSuccess;
}

Result HpzCache::StartEpoch(PlanContext& context, uint64_t epoch) {
  ZPP_CHECK(Prepare());  // made at set-up by a communicator; nothing happens here then
  size_t slots = kMinSlots;
  if (started_) {
    // The exchange of the previous advance has completed long since.
    ZPP_CHECK(ReadPreviousRecord());
    slots = std::max(slots, 2 * static_cast<size_t>(calls_));
  }
  // Taken before the exchange below is enqueued: a pool that refuses it (alike on every rank)
  // fails the call before any collective. Its fence orders it after its earlier users.
  BufferLease fingerprints;
  ZPP_CHECK(context.pool.Take(slots * sizeof(uint64_t), &fingerprints));
  // The calls write their slots under the fence's shared side (AllGather), which waits for the
  // last write only: an exclusive use first orders them after every earlier user of these
  // bytes, readers included (a dropped partition that a hit on another stream still reads).
  ZPP_CHECK(fingerprints.fence().BeginWrite(context.stream));
  ZPP_CHECK(fingerprints.fence().EndWrite(context.stream));
  if (started_) ZPP_CHECK(ExchangeRecord(context));  // the epoch that just ended
  started_ = true;
  epoch_ = epoch;
  calls_ = 0;
  decisions_hash_ = 0x5A5A5A5A5A5A5A5Aull;
  kept_.clear();  // leases return to the pool; their fences order any later reuse
  unpaired_.clear();
  last_pass_ = TrainingPass::kUnknown;
  fingerprints_ = std::move(fingerprints);
  capacity_ = slots;
  return ncclSuccess;
}

int HpzCache::PairedFill(const CallShape& shape) {
  const auto waiting = unpaired_.find(shape);
  if (waiting == unpaired_.end() || waiting->second.empty()) return -1;
  const int fill = waiting->second.back();
  waiting->second.pop_back();
  return kept_.count(fill) != 0 ? fill : -1;  // not kept: a full gather
}

codec::HpzCandidates HpzCache::Candidates(int root, const CallShape& shape) const {
  // The paired fill first, then the others of this shape, nearest to it first (a recomputed or
  // reordered backward reads a neighbour), the later of two equally near first. Only kept fills
  // and decisions every rank took alike: the same list on every rank.
  std::vector<int> others;
  for (const auto& [position, fill] : kept_) {
    if (position != root && fill.shape == shape) others.push_back(position);
  }
  std::sort(others.begin(), others.end(), [root](int a, int b) {
    const int da = std::abs(a - root), db = std::abs(b - root);
    return da != db ? da < db : a > b;
  });
  codec::HpzCandidates candidates;
  const auto add = [&](int position) {
    const uint32_t i = candidates.count++;
    candidates.position[i] = position;
    candidates.fingerprint[i] = FingerprintSlot(position);
    candidates.partition[i] = static_cast<const unsigned char*>(kept_.at(position).lease.data());
  };
  add(root);
  for (int position : others) {
    if (candidates.count == codec::kMaxHpzCandidates) break;
    add(position);
  }
  return candidates;
}

Result HpzCache::BeginCall(PlanContext& context) {
  PollFailures();  // first: its WARN names the epoch the failures happened in
  const uint64_t epoch = epoch_source_();
  if (!started_ || epoch != epoch_) ZPP_CHECK(StartEpoch(context, epoch));
  return ncclSuccess;
}

Result HpzCache::RunHit(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args,
                        int position, int root) {
  // The device sends the partition of the kept fill whose shard equals this rank's shard now:
  // the paired one, or, when the backward went out of order, another; NaN when none
  // (SelectPartition). The host never learns which: nothing here depends on it.
  Stream& stream = context.stream;
  const codec::HpzCandidates candidates = Candidates(root, {args.count, args.dtype});
  Staging staging(context);
  std::byte* send = nullptr;
  const size_t secondary_bytes = SecondaryPartitionBytes(backend_, plan, args);
  // Before any partition's read begins: a pool refusal (every rank's alike) leaves none open.
  ZPP_CHECK(staging.Take(secondary_bytes, &send));
  for (uint32_t i = 0; i < candidates.count; ++i) {
    ZPP_CHECK(kept_.at(candidates.position[i]).lease.fence().BeginRead(stream));
  }
  ZPP_CHECK(backend_.SelectPartition(FingerprintSlot(position), candidates,
                                     static_cast<uint32_t>(position), {send, secondary_bytes},
                                     Counters(), stream));
  for (uint32_t i = 0; i < candidates.count; ++i) {
    ZPP_CHECK(kept_.at(candidates.position[i]).lease.fence().EndRead(stream));
  }
  ZPP_CHECK(RunIntraNodeAllGather(context, plan, args, send));
  stats_.AddHpzHit();  // once the plan ran: a call the pool refused passes through
  return staging.Finish();
}

Result HpzCache::KeepFill(PlanContext& context, const CallShape& shape, size_t secondary_bytes,
                          KeptFill* fill) {
  // Past the bound the newest fills are the ones not kept, never older ones dropped: a backward
  // gather whose own fill lies under a fill no backward pairs with (a module left unsharded
  // after forward) then still finds its own among the kept ones whenever its paired one is kept.
  fill->shape = shape;
  if (kept_bytes() + secondary_bytes > max_bytes_) return ncclSuccess;
  // The pool answers alike on every rank: a refused partition is kept nowhere.
  const Result kept = context.pool.Take(secondary_bytes, &fill->lease);
  if (kept != ncclSuccess && context.pool.TakeShortfall() == 0) return kept;  // not a refusal
  // The bound counts buffers, which may exceed the partition (the pool's size classes, or a
  // larger free buffer): the same sizes on every rank, so the same answer.
  if (fill->lease && kept_bytes() + fill->lease.size() > max_bytes_) fill->lease = BufferLease();
  return ncclSuccess;
}

int HpzCache::Pair(const AllGatherArgs& args, bool slot) {
  const CallShape shape{args.count, static_cast<int>(args.dtype)};
  const TrainingPass pass = args.pass;
  if (pass == TrainingPass::kForward && last_pass_ == TrainingPass::kBackward) {
    // A new forward pass (the next micro-batch, SAM's second pass): the last one's backward is
    // over, and none of its fills will be paired again.
    kept_.clear();
    unpaired_.clear();
  }
  if (pass != TrainingPass::kUnknown) last_pass_ = pass;
  int root = pass == TrainingPass::kBackward ? PairedFill(shape) : -1;
  if (!slot) root = -1;  // no fingerprint to verify the hit with
  decisions_hash_ =
      HashCombine(HashCombine(HashCombine(decisions_hash_, shape.first),
                              static_cast<uint64_t>(shape.second) * 4 + static_cast<int>(pass)),
                  root >= 0 ? 1 : 0);
  return root;
}

Result HpzCache::RunFill(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args,
                         int position, bool slot) {
  // A forward fill is kept, within the bounds, for the backward gather that pairs with it.
  const CallShape shape{args.count, static_cast<int>(args.dtype)};
  const size_t secondary_bytes = SecondaryPartitionBytes(backend_, plan, args);
  KeptFill fill;
  if (args.pass == TrainingPass::kForward) {
    unpaired_[shape].push_back(position);
    if (slot) ZPP_CHECK(KeepFill(context, shape, secondary_bytes, &fill));
  }
  Stream& stream = context.stream;
  Staging staging(context);
  std::byte* area = nullptr;
  if (fill.lease) {
    ZPP_CHECK(fill.lease.fence().BeginWrite(stream));
    area = static_cast<std::byte*>(fill.lease.data());
  } else {
    ZPP_CHECK(staging.Take(secondary_bytes, &area));
  }
  if (plan.delta_bits != 0 && deltas_ != nullptr) {
    ZPP_CHECK(deltas_->RunFill(context, plan, args, !deltas_off_,
                               Counters() + codec::kHpzFailuresCounter, area));
  } else {
    ZPP_CHECK(RunHierarchicalAllGather(context, plan, args, area));
  }
  stats_.AddHpzMiss();
  if (fill.lease) {
    ZPP_CHECK(fill.lease.fence().EndWrite(stream));
    kept_[position] = std::move(fill);
    stats_.NoteHpzKeptBytes(kept_bytes());
  }
  return staging.Finish();
}

Result HpzCache::AllGather(PlanContext& context, plan::Plan* plan, const plan::Call& call,
                           const plan::Shape& shape, const plan::Settings& settings,
                           const AllGatherArgs& args) {
  const int position = calls_++;
  const bool slot = static_cast<size_t>(position) < capacity_;
  // Only the call's pass, count and dtype and what was kept: the same on every rank (contract 3).
  const int root = Pair(args, slot);
  Stream& stream = context.stream;
  // A buffer the pool refuses below ends the call early (it passes through): the slot's read
  // still ends, so that the record at the next advance waits for this fingerprint on any stream.
  struct SlotRead {
    EpochFence* fence = nullptr;
    Stream& stream;
    Result End() {
      EpochFence* const open = std::exchange(fence, nullptr);
      return open != nullptr ? open->EndRead(stream) : ncclSuccess;
    }
    ~SlotRead() { End(); }
  } open_slot{nullptr, context.stream};
  if (slot) {
    // Calls write distinct slots, so they take the fence's shared side and need not wait for
    // each other; the record at the advance takes the exclusive side and waits for them all.
    ZPP_CHECK(fingerprints_.fence().BeginRead(stream));
    // Before the gather: FSDP2's input lies inside the output.
    ZPP_CHECK(backend_.Fingerprint({static_cast<const std::byte*>(args.send), ShardBytes(args)},
                                   FingerprintSlot(position), stream));
    open_slot.fence = &fingerprints_.fence();
  }
  if (root >= 0) {
    *plan = plan::MakePlan(call, shape, settings, plan::HpzState{true});
    ZPP_CHECK(RunHit(context, *plan, args, position, root));
  } else {
    ZPP_CHECK(RunFill(context, *plan, args, position, slot));
  }
  return open_slot.End();
}

}  // namespace zpp::engine
