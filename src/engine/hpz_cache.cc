#include "engine/hpz_cache.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "engine/allgather_plans.h"
#include "log/log.h"
#include "plan/planner.h"

namespace zpp::engine {
namespace {

// What each rank tells the others about an epoch. The call count is in the hash: its seed covers
// every call's (count, dtype).
struct EpochRecord {
  uint64_t pattern_hash;  // written on the device (Backend::ReusePattern)
  // Copied on the device from the hit counters (codec::kHpzFailuresCounter, then
  // kHpzChoicesCounter), both cumulative: the failures, and the sum of the hits' choices.
  uint32_t failures;
  uint32_t choices;
};
static_assert(sizeof(EpochRecord) == 16);
static_assert(offsetof(EpochRecord, choices) == offsetof(EpochRecord, failures) + 4 &&
              codec::kHpzChoicesCounter == codec::kHpzFailuresCounter + 1);

// Fingerprint slots an epoch starts with; an epoch that needs more leaves the rest out of its
// pattern (never reused) and the next epoch gets twice its calls.
constexpr size_t kMinSlots = 256;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

size_t ShardBytes(const AllGatherArgs& args) { return args.count * plan::DtypeBytes(args.dtype); }

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
  for (const auto& [position, entry] : entries_) total += entry.lease.size();
  return total;
}

uint64_t HpzCache::ShapesHash(const std::vector<CallShape>& shapes) const {
  uint64_t h = 0x5A5A5A5A5A5A5A5Aull;
  for (const CallShape& shape : shapes) {
    h = Mix(h, shape.count);
    h = Mix(h, static_cast<uint64_t>(shape.dtype));
  }
  return h;
}

uint64_t* HpzCache::FingerprintSlot(int position) const {
  return static_cast<uint64_t*>(fingerprints_.data()) + position;
}

uint32_t* HpzCache::Counters() const { return static_cast<uint32_t*>(counters_->data()); }

void HpzCache::PollFailures() {
  if (!counters_) return;
  const uint32_t now = std::atomic_ref<uint32_t>(Counters()[codec::kHpzFailuresCounter])
                           .load(std::memory_order_relaxed);
  if (now <= failures_reported_) return;
  const uint32_t fresh = now - failures_reported_;
  stats_.AddHpzVerifyFailures(fresh);
  failures_reported_ = now;
  ZPP_WARN(
      "hpZ: %u check(s) failed on this rank: an all-gather found this rank's shard equal to none "
      "of the secondary partitions kept in this step epoch (weights updated between two gathers "
      "of a layer without zppStepEpochAdvance, or a layer not gathered earlier in the epoch where "
      "the agreed pattern reuses one)%s; the outputs on its node hold NaN, and reuse goes off on "
      "every rank (call zppStepEpochAdvance after every optimizer step)",
      fresh,
      deltas_ != nullptr ? ", or a weight delta (ZPP_QWZ_DELTA) was taken against a reference "
                           "that this rank's copy differs from (deltas go off too)"
                         : "");
}

HpzCache::AgreedPattern HpzCache::BuildAgreed(const std::vector<int32_t>& pattern) const {
  AgreedPattern agreed;
  agreed.shapes = exchanged_shapes_;
  const size_t calls = exchanged_shapes_.size();
  agreed.root.assign(calls, -1);
  agreed.reused.assign(calls, false);
  agreed.keep.assign(calls, false);
  for (size_t i = 0; i < calls; ++i) {
    const int source = i < pattern.size() ? pattern[i] : -1;
    // Equal fingerprints cover equal byte lengths; a reuse also needs the same dtype.
    if (source < 0 || static_cast<size_t>(source) >= i ||
        agreed.shapes[source] != agreed.shapes[i]) {
      continue;
    }
    const int root = agreed.root[source] >= 0 ? agreed.root[source] : source;
    agreed.root[i] = root;
    agreed.reused[root] = true;
  }
  // A fill is kept when a later hit has its (count, dtype): the hit may find the shard there
  // when the calls shifted among calls of one size (see AllGather).
  std::vector<CallShape> hit_later;
  for (size_t i = calls; i-- > 0;) {
    if (agreed.root[i] >= 0) {
      if (std::find(hit_later.begin(), hit_later.end(), agreed.shapes[i]) == hit_later.end()) {
        hit_later.push_back(agreed.shapes[i]);
      }
    } else {
      agreed.keep[i] =
          std::find(hit_later.begin(), hit_later.end(), agreed.shapes[i]) != hit_later.end();
    }
  }
  return agreed;
}

Result HpzCache::HarvestAgreement() {
  if (!exchange_pending_) return ncclSuccess;
  exchange_pending_ = false;
  const int ranks = backend_.world_size();
  const size_t record_bytes = ranks * sizeof(EpochRecord);
  std::vector<std::byte> harvested(record_bytes + exchanged_pattern_calls_ * sizeof(int32_t));
  ZPP_CHECK(
      backend_.ReadAfter(*exchange_done_, harvested.data(), harvest_.data(), harvested.size()));
  stats_.AddHostWait();  // the one host wait on the collective path (zppStats_t::host_waits)
  std::vector<EpochRecord> records(ranks);
  std::memcpy(records.data(), harvested.data(), record_bytes);
  std::vector<int32_t> pattern(exchanged_pattern_calls_);
  std::memcpy(pattern.data(), harvested.data() + record_bytes, pattern.size() * sizeof(int32_t));

  bool same_pattern = true;
  uint64_t failures = 0;
  std::string failing_ranks, other_choices;
  const auto add = [](std::string& list, int rank) {
    if (!list.empty()) list.push_back(',');
    list.append(std::to_string(rank));
  };
  const uint32_t usual_choices = MostCommonChoices(records);
  for (int r = 0; r < ranks; ++r) {
    same_pattern &= records[r].pattern_hash == records[0].pattern_hash;
    failures += records[r].failures;
    if (records[r].failures != 0) add(failing_ranks, r);
    if (records[r].choices != usual_choices) add(other_choices, r);
  }
  if (disabled_) return ncclSuccess;
  const auto epoch = static_cast<unsigned long long>(exchanged_epoch_);
  if (failures != 0) {
    disabled_ = true;
    trusted_ = false;
    agreed_ = {};
    ZPP_WARN(
        "hpZ: %llu verification failure(s) by step epoch %llu, on rank(s) %s: a shard changed "
        "after the secondary partition a later gather reused was filled (is zppStepEpochAdvance "
        "called after every optimizer step?). Those ranks' outputs were NaN; other ranks received "
        "their old shards in those gathers. Secondary partitions will not be reused on this "
        "communicator%s",
        static_cast<unsigned long long>(failures), epoch, failing_ranks.c_str(),
        deltas_ != nullptr ? "; weight deltas (ZPP_QWZ_DELTA) stop too: every gather sends in "
                             "full (a failure may also be a delta whose reference differed)"
                           : "");
    return ncclSuccess;
  }
  if (!other_choices.empty()) {
    // Every rank hit the same calls, each choosing by its own shard: different choices mean
    // shards equal across layers on some ranks only (or changed on some), and a partition also
    // holds other nodes' shards, so some ranks may have received stale shards.
    disabled_ = true;
    trusted_ = false;
    agreed_ = {};
    ZPP_WARN(
        "hpZ: by step epoch %llu, rank(s) %s reused other secondary partitions than most ranks in "
        "the same gathers (shards equal across layers, or changed, on some ranks only): ranks "
        "may have received stale shards of other nodes in those gathers. Secondary partitions "
        "will not be reused on this communicator (check those ranks' results; ZPP_HPZ=0 runs "
        "without reuse from the start)",
        epoch, other_choices.c_str());
    return ncclSuccess;
  }
  if (!same_pattern) {
    // Not misuse by itself (shards identical on some ranks only, say at initialization): reuse
    // pauses until the ranks agree again.
    trusted_ = false;
    agreed_ = {};
    if (!warned_disagreement_) {
      warned_disagreement_ = true;
      ZPP_WARN(
          "hpZ: ranks saw different all-gather reuse patterns in step epoch %llu (their shards "
          "are equal to earlier ones on some ranks only, or their calls differ): secondary "
          "partitions are not reused until the ranks agree again",
          epoch);
    } else {
      ZPP_INFO(kPlan, "hpZ: ranks disagree on the reuse pattern of step epoch %llu: paused", epoch);
    }
    return ncclSuccess;
  }
  agreed_ = BuildAgreed(pattern);
  if (!trusted_) {
    ZPP_INFO(kPlan, "hpZ: all ranks agree on the reuse pattern of step epoch %llu (%zu calls)",
             epoch, agreed_.shapes.size());
  }
  trusted_ = true;
  return ncclSuccess;
}

Result HpzCache::ExchangeRecord(PlanContext& context) {
  Stream& stream = context.stream;
  const int ranks = backend_.world_size();
  const auto derived = static_cast<uint32_t>(std::min(shapes_.size(), capacity_));
  // Buffers before the exchange is enqueued, from the pool: a refusal is every rank's alike.
  if (!exchange_send_) ZPP_CHECK(context.pool.Take(sizeof(EpochRecord), &exchange_send_));
  // The previous exchange has been read (HarvestAgreement runs first): the area may change.
  if (!harvest_ || harvest_pattern_capacity_ < derived) {
    const size_t capacity = std::max<size_t>(derived, kMinSlots);
    BufferLease bigger;
    ZPP_CHECK(context.pool.Take(ranks * sizeof(EpochRecord) + capacity * sizeof(int32_t), &bigger));
    harvest_ = std::move(bigger);
    harvest_pattern_capacity_ = capacity;
  }
  auto* send = static_cast<std::byte*>(exchange_send_.data());
  auto* pattern = reinterpret_cast<int32_t*>(static_cast<std::byte*>(harvest_.data()) +
                                             ranks * sizeof(EpochRecord));
  // Every buffer below is written under its fence's exclusive side, as a kept partition is
  // (contract 1): the pool may have handed it from another user on another stream (a qgZ
  // staging buffer on the reduce-scatter stream, seen by HpzStreamOrderTest), which the host's
  // wait for the previous exchange (HarvestAgreement) does not order.
  ZPP_CHECK(exchange_send_.fence().BeginWrite(stream));
  ZPP_CHECK(harvest_.fence().BeginWrite(stream));
  // The fingerprints' exclusive side (see AllGather): waits for every call's slot, on every
  // stream.
  ZPP_CHECK(fingerprints_.fence().BeginWrite(stream));
  ZPP_CHECK(backend_.ReusePattern(static_cast<const uint64_t*>(fingerprints_.data()), derived,
                                  ShapesHash(shapes_), pattern, reinterpret_cast<uint64_t*>(send),
                                  stream));
  ZPP_CHECK(fingerprints_.fence().EndWrite(stream));
  // After every hit's choice: the fingerprint fence ordered every call before this.
  ZPP_CHECK(backend_.Memcpy(send + offsetof(EpochRecord, failures),
                            Counters() + codec::kHpzFailuresCounter, 2 * sizeof(uint32_t), stream));
  ZPP_CHECK(
      backend_.AllGather(send, harvest_.data(), sizeof(EpochRecord), GroupKind::kWorld, stream));
  ZPP_CHECK(exchange_send_.fence().EndWrite(stream));
  ZPP_CHECK(harvest_.fence().EndWrite(stream));
  ZPP_CHECK(backend_.RecordEvent(*exchange_done_, stream));
  exchange_pending_ = true;
  exchanged_shapes_ = shapes_;
  exchanged_pattern_calls_ = derived;
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
    ZPP_CHECK(HarvestAgreement());
    slots = std::max(slots, 2 * shapes_.size());
  }
  // Every agreed position needs its slot: a hit verifies against it.
  slots = std::max(slots, agreed_.shapes.size());
  // Taken before the exchange below is enqueued: a pool that refuses it (alike on every rank)
  // fails the call before any collective. Its fence orders it after its earlier users.
  BufferLease fingerprints;
  ZPP_CHECK(context.pool.Take(slots * sizeof(uint64_t), &fingerprints));
  // The calls write their slots under the fence's shared side (AllGather), which waits for the
  // last write only: an exclusive use first orders them after every earlier user of these
  // bytes, readers included (a dropped partition that a hit on another stream still reads).
  ZPP_CHECK(fingerprints.fence().BeginWrite(context.stream));
  ZPP_CHECK(fingerprints.fence().EndWrite(context.stream));
  // Then tell about the epoch that just ended.
  if (started_) ZPP_CHECK(ExchangeRecord(context));
  started_ = true;
  epoch_ = epoch;
  entries_.clear();  // leases return to the pool; their fences order any later reuse
  shapes_.clear();
  departed_ = false;
  fingerprints_ = std::move(fingerprints);
  capacity_ = slots;
  return ncclSuccess;
}

int HpzCache::PlannedRoot(int position, const CallShape& call) {
  if (!trusted_ || departed_) return -1;
  const auto agreed_calls = static_cast<int>(agreed_.shapes.size());
  if (position >= agreed_calls || agreed_.shapes[position] != call) {
    departed_ = true;
    entries_.clear();  // no hit follows in this epoch
    ZPP_INFO(kPlan,
             "hpZ: all-gather %d of step epoch %llu departs from the agreed pattern (%d calls): "
             "full gathers for the rest of the epoch",
             position, static_cast<unsigned long long>(epoch_), agreed_calls);
    return -1;
  }
  const int root = agreed_.root[position];
  return root >= 0 && entries_.count(root) != 0 ? root : -1;
}

void HpzCache::MakeRoom(size_t bytes) {
  // Fills the agreed pattern does not reuse first, then the oldest: every rank holds the same
  // entries of the same sizes, so every rank drops the same ones.
  while (!entries_.empty() && kept_bytes() + bytes > max_bytes_) {
    auto victim = std::find_if(entries_.begin(), entries_.end(),
                               [](const auto& kept) { return !kept.second.planned; });
    entries_.erase(victim != entries_.end() ? victim : entries_.begin());
  }
}

codec::HpzCandidates HpzCache::Candidates(int root, const CallShape& call) const {
  // The planned fill first, then the others of this (count, dtype), nearest to it first (a
  // shifted sequence reads a neighbour), the later of two equally near first. Only kept fills
  // and agreed state: the same list on every rank.
  std::vector<int> others;
  for (const auto& [position, entry] : entries_) {
    if (position != root && entry.shape == call) others.push_back(position);
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
    candidates.partition[i] = static_cast<const unsigned char*>(entries_.at(position).lease.data());
  };
  add(root);
  for (int position : others) {
    if (candidates.count == codec::kMaxHpzCandidates) break;
    add(position);
  }
  return candidates;
}

Result HpzCache::BeginCall(PlanContext& context) {
  const uint64_t epoch = epoch_source_();
  if (!started_ || epoch != epoch_) ZPP_CHECK(StartEpoch(context, epoch));
  PollFailures();
  return ncclSuccess;
}

Result HpzCache::AllGather(PlanContext& context, plan::Plan* plan, const plan::Call& call,
                           const plan::Shape& shape, const plan::Settings& settings,
                           const AllGatherArgs& args) {
  const int position = static_cast<int>(shapes_.size());
  const CallShape this_call{args.count, static_cast<int>(args.dtype)};
  shapes_.push_back(this_call);
  // Every decision below uses only agreed state and (count, dtype): the same on every rank.
  const int root = PlannedRoot(position, this_call);

  Backend& backend = backend_;
  Stream& stream = context.stream;
  const std::span<const std::byte> shard{static_cast<const std::byte*>(args.send),
                                         ShardBytes(args)};
  const bool slot = static_cast<size_t>(position) < capacity_;
  // A buffer the pool refuses below ends the call early (it passes through): the slot's read
  // still ends, so that the pattern at the next advance waits for this fingerprint on any stream.
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
    // each other; the pattern at the advance takes the exclusive side and waits for them all. A
    // hit reads its fill's slot in order through the partition's own fence.
    ZPP_CHECK(fingerprints_.fence().BeginRead(stream));
    // Before the gather: FSDP2's input lies inside the output.
    ZPP_CHECK(backend.Fingerprint(shard, FingerprintSlot(position), stream));
    open_slot.fence = &fingerprints_.fence();
  }
  if (root >= 0) {
    *plan = plan::MakePlan(call, shape, settings, plan::HpzState{true});
    // The device sends the partition of the kept fill whose shard equals this rank's shard now:
    // the planned one, or, when the calls shifted among calls of one size, another; NaN when
    // none (SelectPartition). The host never learns which: nothing here depends on it.
    const codec::HpzCandidates candidates = Candidates(root, this_call);
    Staging staging(context);
    std::byte* send = nullptr;
    const size_t secondary_bytes = SecondaryPartitionBytes(backend, *plan, args);
    // Before any partition's read begins: a pool refusal (every rank's alike) leaves none open.
    ZPP_CHECK(staging.Take(secondary_bytes, &send));
    for (uint32_t i = 0; i < candidates.count; ++i) {
      ZPP_CHECK(entries_.at(candidates.position[i]).lease.fence().BeginRead(stream));
    }
    ZPP_CHECK(backend.SelectPartition(FingerprintSlot(position), candidates,
                                      static_cast<uint32_t>(position), {send, secondary_bytes},
                                      Counters(), stream));
    for (uint32_t i = 0; i < candidates.count; ++i) {
      ZPP_CHECK(entries_.at(candidates.position[i]).lease.fence().EndRead(stream));
    }
    ZPP_CHECK(RunIntraNodeAllGather(context, *plan, args, send));
    // Counted once the plan ran: a call the pool refused passes through and is neither.
    stats_.AddHpzHit();
    ZPP_CHECK(open_slot.End());
    return staging.Finish();
  }

  // A fill: the full hierarchical gather; its secondary partition kept, until the epoch ends,
  // when a later agreed hit has its (count, dtype) and it fits.
  const size_t secondary_bytes = SecondaryPartitionBytes(backend, *plan, args);
  const bool keep = trusted_ && !departed_ && agreed_.keep[position];
  Entry entry;
  entry.shape = this_call;
  entry.planned = keep && agreed_.reused[position];
  if (keep && secondary_bytes <= max_bytes_) {
    MakeRoom(secondary_bytes);
    // The pool answers alike on every rank: a refused partition is kept nowhere.
    const Result kept = context.pool.Take(secondary_bytes, &entry.lease);
    if (kept != ncclSuccess && context.pool.TakeShortfall() == 0) return kept;  // not a refusal
    // The bound counts buffers, which may exceed the partition (the pool's size classes, or a
    // larger free buffer): the same sizes on every rank, so the same drops.
    if (entry.lease && entry.lease.size() > max_bytes_) entry.lease = BufferLease();
    if (entry.lease) MakeRoom(entry.lease.size());
  }
  Staging staging(context);
  std::byte* area = nullptr;
  if (entry.lease) {
    ZPP_CHECK(entry.lease.fence().BeginWrite(stream));
    area = static_cast<std::byte*>(entry.lease.data());
  } else {
    ZPP_CHECK(staging.Take(secondary_bytes, &area));
  }
  if (plan->delta_bits != 0 && deltas_ != nullptr) {
    ZPP_CHECK(deltas_->RunFill(context, *plan, args, !disabled_,
                               Counters() + codec::kHpzFailuresCounter, area));
  } else {
    ZPP_CHECK(RunHierarchicalAllGather(context, *plan, args, area));
  }
  stats_.AddHpzMiss();
  if (entry.lease) {
    ZPP_CHECK(entry.lease.fence().EndWrite(stream));
    entries_[position] = std::move(entry);
    stats_.NoteHpzKeptBytes(kept_bytes());
  }
  ZPP_CHECK(open_slot.End());
  return staging.Finish();
}

}  // namespace zpp::engine
