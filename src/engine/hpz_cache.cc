#include "engine/hpz_cache.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <string>

#include "engine/allgather_plans.h"
#include "log/log.h"
#include "plan/planner.h"

namespace zpp::engine {
namespace {

// What each rank tells the others about an epoch.
struct EpochRecord {
  uint64_t pattern_hash;  // written on the device (Backend::ReusePattern)
  uint32_t calls;
  uint32_t failures;  // cumulative: written on the device from the counter
};
static_assert(sizeof(EpochRecord) == 16);

// Fingerprint slots an epoch starts with; an epoch that needs more leaves the rest out of its
// pattern (never reused) and the next epoch gets twice its calls.
constexpr size_t kMinSlots = 256;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

size_t ShardBytes(const AllGatherArgs& args) { return args.count * plan::DtypeBytes(args.dtype); }

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

void HpzCache::PollFailures() {
  if (!failures_) return;
  const uint32_t now = std::atomic_ref<uint32_t>(*static_cast<uint32_t*>(failures_->data()))
                           .load(std::memory_order_relaxed);
  if (now <= failures_reported_) return;
  const uint32_t fresh = now - failures_reported_;
  stats_.AddHpzVerifyFailures(fresh);
  failures_reported_ = now;
  ZPP_WARN(
      "hpZ: %u all-gather(s) found this rank's shard changed since the secondary partition they "
      "reused was filled in the same step epoch (weights updated between the two gathers without "
      "zppStepEpochAdvance, or a call sequence that shifted among calls of one size); their "
      "outputs were filled with NaN, and reuse goes off on every rank",
      fresh);
}

HpzCache::AgreedPattern HpzCache::BuildAgreed(const std::vector<int32_t>& pattern) const {
  AgreedPattern agreed;
  agreed.shapes = exchanged_shapes_;
  const size_t calls = exchanged_shapes_.size();
  agreed.root.assign(calls, -1);
  agreed.last_use.assign(calls, -1);
  for (size_t i = 0; i < calls; ++i) {
    const int source = i < pattern.size() ? pattern[i] : -1;
    // Equal fingerprints cover equal byte lengths; a reuse also needs the same dtype.
    if (source < 0 || static_cast<size_t>(source) >= i ||
        agreed.shapes[source] != agreed.shapes[i]) {
      continue;
    }
    const int root = agreed.root[source] >= 0 ? agreed.root[source] : source;
    agreed.root[i] = root;
    agreed.last_use[root] = static_cast<int>(i);
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
  std::vector<EpochRecord> records(ranks);
  std::memcpy(records.data(), harvested.data(), record_bytes);
  std::vector<int32_t> pattern(exchanged_pattern_calls_);
  std::memcpy(pattern.data(), harvested.data() + record_bytes, pattern.size() * sizeof(int32_t));

  bool same_pattern = true;
  uint64_t failures = 0;
  std::string failing_ranks;
  for (int r = 0; r < ranks; ++r) {
    same_pattern &=
        records[r].pattern_hash == records[0].pattern_hash && records[r].calls == records[0].calls;
    failures += records[r].failures;
    if (records[r].failures != 0) {
      if (!failing_ranks.empty()) failing_ranks.push_back(',');
      failing_ranks.append(std::to_string(r));
    }
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
        "communicator",
        static_cast<unsigned long long>(failures), epoch, failing_ranks.c_str());
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
  const auto calls = static_cast<uint32_t>(shapes_.size());
  const auto derived = static_cast<uint32_t>(std::min(shapes_.size(), capacity_));
  // Buffers before the exchange is enqueued, from the pool: a refusal is every rank's alike.
  if (!exchange_send_) {
    ZPP_CHECK(context.pool.Take(sizeof(EpochRecord), &exchange_send_));
    ZPP_CHECK(backend_.CreateEvent(&exchange_done_));
  }
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
  // The fence's exclusive side (see AllGather): waits for every call's slot, on every stream.
  ZPP_CHECK(fingerprints_.fence().BeginWrite(stream));
  ZPP_CHECK(backend_.ReusePattern(static_cast<const uint64_t*>(fingerprints_.data()), derived,
                                  ShapesHash(shapes_), pattern, reinterpret_cast<uint64_t*>(send),
                                  stream));
  ZPP_CHECK(fingerprints_.fence().EndWrite(stream));
  ZPP_CHECK(
      backend_.CopyFromHost(send + offsetof(EpochRecord, calls), &calls, sizeof(calls), stream));
  // After every hit's verification: the fingerprint fence ordered every call before this.
  ZPP_CHECK(backend_.Memcpy(send + offsetof(EpochRecord, failures), failures_->data(),
                            sizeof(uint32_t), stream));
  ZPP_CHECK(
      backend_.AllGather(send, harvest_.data(), sizeof(EpochRecord), GroupKind::kWorld, stream));
  ZPP_CHECK(backend_.RecordEvent(*exchange_done_, stream));
  exchange_pending_ = true;
  exchanged_shapes_ = shapes_;
  exchanged_pattern_calls_ = derived;
  exchanged_epoch_ = epoch_;
  return ncclSuccess;
}

Result HpzCache::StartEpoch(PlanContext& context, uint64_t epoch) {
  if (!failures_) {
    ZPP_CHECK(backend_.AllocateHostVisible(sizeof(uint32_t), &failures_));
    std::memset(failures_->data(), 0, sizeof(uint32_t));  // no device work has it yet
  }
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
  // Oldest fill first: every rank holds the same entries of the same sizes, so every rank
  // drops the same ones.
  while (!entries_.empty() && kept_bytes() + bytes > max_bytes_) entries_.erase(entries_.begin());
}

Result HpzCache::AllGather(PlanContext& context, plan::Plan* plan, const plan::Call& call,
                           const plan::Shape& shape, const plan::Settings& settings,
                           const AllGatherArgs& args) {
  const uint64_t epoch = epoch_source_();
  if (!started_ || epoch != epoch_) ZPP_CHECK(StartEpoch(context, epoch));
  PollFailures();

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
    ~SlotRead() {
      if (fence != nullptr) fence->EndRead(stream);
    }
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
    stats_.AddHpzHit();
    auto kept = entries_.find(root);
    Entry& entry = kept->second;
    ZPP_CHECK(entry.lease.fence().BeginRead(stream));
    ZPP_CHECK(RunIntraNodeAllGather(context, *plan, args,
                                    static_cast<const std::byte*>(entry.lease.data())));
    ZPP_CHECK(backend.VerifyFingerprint(
        FingerprintSlot(position), FingerprintSlot(root),
        {args.recv, args.dtype, args.count * static_cast<size_t>(shape.world)}, /*poison=*/true,
        static_cast<uint32_t*>(failures_->data()), stream));
    ZPP_CHECK(entry.lease.fence().EndRead(stream));
    open_slot.fence = nullptr;
    ZPP_CHECK(fingerprints_.fence().EndRead(stream));
    if (agreed_.last_use[root] == position) entries_.erase(kept);  // no later reuse
    return ncclSuccess;
  }

  // A fill: the full hierarchical gather; its secondary partition kept when the agreed pattern
  // reuses it later and it fits.
  stats_.AddHpzMiss();
  const size_t secondary_bytes = SecondaryPartitionBytes(backend, *plan, args);
  const bool reused_later = trusted_ && !departed_ && agreed_.last_use[position] > position;
  Entry entry;
  entry.shape = this_call;
  if (reused_later && secondary_bytes <= max_bytes_) {
    MakeRoom(secondary_bytes);
    // The pool answers alike on every rank: a refused partition is kept nowhere.
    const Result kept = context.pool.Take(secondary_bytes, &entry.lease);
    if (kept != ncclSuccess && context.pool.TakeShortfall() == 0) return kept;  // not a refusal
  }
  Staging staging(context);
  std::byte* area = nullptr;
  if (entry.lease) {
    ZPP_CHECK(entry.lease.fence().BeginWrite(stream));
    area = static_cast<std::byte*>(entry.lease.data());
  } else {
    ZPP_CHECK(staging.Take(secondary_bytes, &area));
  }
  ZPP_CHECK(RunHierarchicalAllGather(context, *plan, args, area));
  if (entry.lease) {
    ZPP_CHECK(entry.lease.fence().EndWrite(stream));
    entries_[position] = std::move(entry);
    stats_.NoteHpzKeptBytes(kept_bytes());
  }
  open_slot.fence = nullptr;
  if (slot) ZPP_CHECK(fingerprints_.fence().EndRead(stream));
  return staging.Finish();
}

}  // namespace zpp::engine
