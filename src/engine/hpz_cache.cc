#include "engine/hpz_cache.h"

#include <atomic>
#include <cstddef>
#include <cstring>

#include "engine/allgather_plans.h"
#include "log/log.h"
#include "plan/planner.h"

namespace zpp::engine {
namespace {

// What each rank tells the others about an epoch.
struct EpochRecord {
  uint64_t pattern_hash;
  uint32_t calls;
  uint32_t failures;  // cumulative: written on the device from the counter
};
static_assert(sizeof(EpochRecord) == 16);

constexpr size_t kFingerprintBytes = 16;  // 8 used; 16 keeps the next buffer aligned

// Where the fill fingerprint sits after a secondary partition: 16-byte aligned, since an
// unquantized partition of an odd count ends anywhere.
size_t FingerprintOffset(size_t secondary_bytes) { return (secondary_bytes + 15) & ~size_t{15}; }

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

}  // namespace

uint64_t* HpzCache::Entry::fingerprint() const {
  return reinterpret_cast<uint64_t*>(static_cast<std::byte*>(lease.data()) +
                                     FingerprintOffset(secondary_bytes));
}

HpzCache::HpzCache(Backend& backend, uint64_t max_bytes, StatsCounters& stats,
                   std::function<uint64_t()> epoch)
    : backend_(backend), max_bytes_(max_bytes), stats_(stats), epoch_source_(std::move(epoch)) {}

uint64_t HpzCache::kept_bytes() const {
  uint64_t total = 0;
  for (const auto& [position, entry] : entries_) total += entry.lease.size();
  return total;
}

uint64_t HpzCache::PatternHash() const {
  uint64_t h = 0x5A5A5A5A5A5A5A5Aull;
  for (size_t i = 0; i < pattern_.size(); ++i) {
    h = Mix(h, static_cast<uint64_t>(pattern_[i] + 1));
    h = Mix(h, shapes_[i].first);
    h = Mix(h, static_cast<uint64_t>(shapes_[i].second));
  }
  return h;
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
      "hpZ: %u all-gather(s) found this rank's shard changed since its secondary partition was "
      "filled in the same step epoch (weights updated without zppStepEpochAdvance, or one input "
      "buffer reused for different weights); a reused partition's output was filled with NaN, "
      "and reuse goes off on every rank",
      fresh);
}

Result HpzCache::HarvestAgreement() {
  if (!exchange_pending_) return ncclSuccess;
  exchange_pending_ = false;
  const int ranks = backend_.world_size();
  std::vector<EpochRecord> records(ranks);
  ZPP_CHECK(backend_.ReadAfter(*exchange_done_, records.data(), exchange_recv_->data(),
                               records.size() * sizeof(EpochRecord)));
  bool same_pattern = true;
  uint64_t failures = 0;
  for (const EpochRecord& record : records) {
    same_pattern &=
        record.pattern_hash == records[0].pattern_hash && record.calls == records[0].calls;
    failures += record.failures;
  }
  if (disabled_) return ncclSuccess;
  if (!same_pattern) {
    disabled_ = true;
    ZPP_WARN(
        "hpZ: ranks saw different all-gather reuse patterns in step epoch %llu (their input "
        "pointers differ): secondary partitions will not be reused on this communicator",
        static_cast<unsigned long long>(exchanged_epoch_));
  } else if (failures != 0) {
    disabled_ = true;
    ZPP_WARN(
        "hpZ: %llu verification failure(s) by step epoch %llu (a shard changed inside an epoch: "
        "is zppStepEpochAdvance called after every optimizer step? does one buffer feed several "
        "all-gathers?): secondary partitions will not be reused on this communicator",
        static_cast<unsigned long long>(failures),
        static_cast<unsigned long long>(exchanged_epoch_));
  } else {
    agreed_ = exchanged_pattern_;
    if (!trusted_) {
      ZPP_INFO(kPlan, "hpZ: all ranks agree on %zu all-gathers per step epoch; reuse on",
               agreed_.size());
    }
    trusted_ = true;
  }
  if (disabled_) {
    trusted_ = false;
    agreed_.clear();
  }
  return ncclSuccess;
}

Result HpzCache::ExchangeRecord(Stream& stream) {
  const int ranks = backend_.world_size();
  if (!exchange_send_) {
    ZPP_CHECK(backend_.Allocate(sizeof(EpochRecord), &exchange_send_));
    ZPP_CHECK(backend_.Allocate(sizeof(EpochRecord) * ranks, &exchange_recv_));
    ZPP_CHECK(backend_.CreateEvent(&exchange_done_));
  }
  EpochRecord record{PatternHash(), static_cast<uint32_t>(pattern_.size()), 0};
  auto* send = static_cast<std::byte*>(exchange_send_->data());
  ZPP_CHECK(backend_.CopyFromHost(send, &record, offsetof(EpochRecord, failures), stream));
  ZPP_CHECK(backend_.Memcpy(send + offsetof(EpochRecord, failures), failures_->data(),
                            sizeof(uint32_t), stream));
  ZPP_CHECK(backend_.AllGather(send, exchange_recv_->data(), sizeof(EpochRecord), GroupKind::kWorld,
                               stream));
  ZPP_CHECK(backend_.RecordEvent(*exchange_done_, stream));
  exchange_pending_ = true;
  exchanged_pattern_ = pattern_;
  exchanged_epoch_ = epoch_;
  return ncclSuccess;
}

Result HpzCache::StartEpoch(Stream& stream, uint64_t epoch) {
  if (!failures_) {
    ZPP_CHECK(backend_.AllocateHostVisible(sizeof(uint32_t), &failures_));
    std::memset(failures_->data(), 0, sizeof(uint32_t));  // no device work has it yet
  }
  if (started_) {
    // The exchange of two epochs ago has completed long since; then tell about the last one.
    ZPP_CHECK(HarvestAgreement());
    ZPP_CHECK(ExchangeRecord(stream));
  }
  started_ = true;
  epoch_ = epoch;
  entries_.clear();  // leases return to the pool; their fences order any later reuse
  last_fill_.clear();
  pattern_.clear();
  shapes_.clear();
  return ncclSuccess;
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
  if (!started_ || epoch != epoch_) ZPP_CHECK(StartEpoch(context.stream, epoch));
  PollFailures();

  const int position = static_cast<int>(pattern_.size());
  const LocalKey key{args.send, args.count, static_cast<int>(args.dtype)};
  auto seen = last_fill_.find(key);
  const int would_be = seen == last_fill_.end() ? -1 : seen->second;
  pattern_.push_back(would_be);
  shapes_.emplace_back(args.count, static_cast<int>(args.dtype));

  // The agreed decision: identical inputs on every rank, whatever the pointers are.
  int source = -1;
  if (trusted_ && position < static_cast<int>(agreed_.size())) source = agreed_[position];
  auto kept = source >= 0 ? entries_.find(source) : entries_.end();
  const bool hit = kept != entries_.end() && kept->second.count == args.count &&
                   kept->second.dtype == args.dtype;

  Backend& backend = backend_;
  Stream& stream = context.stream;
  if (hit) {
    *plan = plan::MakePlan(call, shape, settings, plan::HpzState{true});
    stats_.AddHpzHit();
    Entry& entry = kept->second;
    Staging staging(context);
    std::byte* now = nullptr;
    ZPP_CHECK(staging.Take(kFingerprintBytes, &now));
    const size_t shard = args.count * plan::DtypeBytes(args.dtype);
    ZPP_CHECK(backend.Fingerprint({static_cast<const std::byte*>(args.send), shard},
                                  reinterpret_cast<uint64_t*>(now), stream));
    ZPP_CHECK(entry.lease.fence().BeginRead(stream));
    ZPP_CHECK(RunIntraNodeAllGather(context, *plan, args,
                                    static_cast<const std::byte*>(entry.lease.data())));
    ZPP_CHECK(backend.VerifyFingerprint(
        reinterpret_cast<uint64_t*>(now), entry.fingerprint(),
        {args.recv, args.dtype, args.count * static_cast<size_t>(shape.world)}, /*poison=*/true,
        static_cast<uint32_t*>(failures_->data()), stream));
    ZPP_CHECK(entry.lease.fence().EndRead(stream));
    return staging.Finish();
  }

  // A fill: the full hierarchical gather, its secondary partition kept when it fits.
  stats_.AddHpzMiss();
  const size_t secondary_bytes = SecondaryPartitionBytes(backend, *plan, args);
  const size_t needed = FingerprintOffset(secondary_bytes) + kFingerprintBytes;
  Entry entry;
  entry.secondary_bytes = secondary_bytes;
  entry.count = args.count;
  entry.dtype = args.dtype;
  if (needed <= max_bytes_) {
    MakeRoom(needed);
    ZPP_CHECK(context.pool.Take(needed, &entry.lease));
  }
  Staging staging(context);
  std::byte* area = nullptr;
  if (entry.lease) {
    ZPP_CHECK(entry.lease.fence().BeginWrite(stream));
    area = static_cast<std::byte*>(entry.lease.data());
  } else {
    ZPP_CHECK(staging.Take(needed, &area));
  }
  uint64_t* fill_fingerprint =
      reinterpret_cast<uint64_t*>(area + FingerprintOffset(secondary_bytes));
  const size_t shard = args.count * plan::DtypeBytes(args.dtype);
  ZPP_CHECK(backend.Fingerprint({static_cast<const std::byte*>(args.send), shard}, fill_fingerprint,
                                stream));
  ZPP_CHECK(RunHierarchicalAllGather(context, *plan, args, area));
  // The reuse this rank would have made: checked against the partition it would have used.
  if (would_be >= 0) {
    auto previous = entries_.find(would_be);
    if (previous != entries_.end()) {
      ZPP_CHECK(previous->second.lease.fence().BeginRead(stream));
      ZPP_CHECK(backend.VerifyFingerprint(fill_fingerprint, previous->second.fingerprint(), {},
                                          /*poison=*/false,
                                          static_cast<uint32_t*>(failures_->data()), stream));
      ZPP_CHECK(previous->second.lease.fence().EndRead(stream));
    }
  }
  last_fill_[key] = position;
  if (entry.lease) {
    ZPP_CHECK(entry.lease.fence().EndWrite(stream));
    entries_[position] = std::move(entry);
  }
  return staging.Finish();
}

}  // namespace zpp::engine
