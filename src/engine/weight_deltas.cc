#include "engine/weight_deltas.h"

#include <utility>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/weight_delta.h"
#include "engine/allgather_plans.h"

namespace zpp::engine {
namespace {

// This rank's message across nodes, in bytes: its delta, its shard quantized, or 0 (sent as is).
size_t MessageBytes(const plan::Plan& plan, const AllGatherArgs& args, bool delta,
                    const codec::Format& delta_format, const codec::Format& full_format) {
  if (delta) return codec::DeltaMessageBytes(args.count, args.dtype, delta_format);
  return plan.send_bits != 0 ? codec::PieceBytes(args.count, args.dtype, full_format) : 0;
}

}  // namespace

WeightDeltas::WeightDeltas(BufferPool& pool, uint64_t max_bytes, uint64_t refresh,
                           StatsCounters& stats, std::function<uint64_t()> epoch)
    : slots_(pool, max_bytes, epoch), refresh_(refresh), stats_(stats), epoch_(std::move(epoch)) {}

Result WeightDeltas::RunFill(PlanContext& context, const plan::Plan& plan,
                             const AllGatherArgs& args, bool allowed, uint32_t* failures,
                             std::byte* secondary) {
  Backend& backend = context.backend;
  const int nodes = backend.GroupSize(GroupKind::kInterNode);
  const int node = backend.GroupRank(GroupKind::kInterNode);
  const size_t shard = args.count * NcclTypeBytes(args.dtype);
  const size_t partition = shard * static_cast<size_t>(nodes);
  StepSlots::Slot slot;
  ZPP_CHECK(slots_.Take(args.count, args.dtype, partition, &slot));
  // Everything below is the same on every rank: the slot's state (same calls, sizes and order),
  // the epoch, and hpZ's agreed state (`allowed`).
  const bool refresh = refresh_ != 0 && epoch_() % refresh_ == 0;
  const bool delta = allowed && slot.lease != nullptr && slot.valid && !refresh;
  const codec::Format delta_format{plan.delta_bits, plan.block, plan.rotate};
  const codec::Format full_format{plan.send_bits, plan.block, plan.rotate};
  const size_t message = MessageBytes(plan, args, delta, delta_format, full_format);

  // Every buffer before the first collective: a pool refusal passes the call through whole.
  Staging staging(context);
  std::byte* mine = nullptr;
  std::byte* received = nullptr;
  std::byte* gathered = nullptr;
  std::byte* held = nullptr;  // the references' fingerprints, for the CUDA kernels
  const size_t held_bytes = delta ? sizeof(uint64_t) * nodes : 0;
  if (message != 0) {
    ZPP_CHECK(staging.Take(message, &mine));
    ZPP_CHECK(staging.Take(message * nodes, &received));
  }
  if (held_bytes != 0) ZPP_CHECK(staging.Take(held_bytes, &held));
  ZPP_CHECK(staging.Take(IntraNodeGatheredBytes(backend, plan, args), &gathered));

  Stream& stream = context.stream;
  BufferLease* const lease = slot.lease;
  std::byte* const reference =
      lease != nullptr ? static_cast<std::byte*>(lease->data()) : secondary;
  if (lease != nullptr) ZPP_CHECK(lease->fence().BeginWrite(stream));
  const codec::TensorView references{reference, args.dtype, args.count * nodes};
  Result result = ncclSuccess;
  if (delta) {
    const codec::ConstTensorView mine_reference{reference + shard * node, args.dtype, args.count};
    result = backend.EncodeDelta({args.send, args.dtype, args.count}, mine_reference, delta_format,
                                 {mine, message}, stream);
    if (result == ncclSuccess) {
      result = backend.AllGather(mine, received, message, GroupKind::kInterNode, stream);
    }
    if (result == ncclSuccess) {
      result = backend.ApplyDeltaBatch({received, message * nodes}, message,
                                       static_cast<uint32_t>(nodes), args.count, delta_format,
                                       references, {held, held_bytes}, failures, stream);
    }
  } else if (message != 0) {
    result = backend.Quantize({args.send, args.dtype, args.count}, full_format, codec::Rounding{},
                              {mine, message}, stream);
    if (result == ncclSuccess) {
      result = backend.AllGather(mine, received, message, GroupKind::kInterNode, stream);
    }
    if (result == ncclSuccess) {
      result = backend.DequantizeBatch({received, message * nodes}, args.count,
                                       codec::BatchMap::Strided(nodes, message, args.count),
                                       full_format, references, stream);
    }
  } else {
    result = backend.AllGather(args.send, reference, shard, GroupKind::kInterNode, stream);
  }
  if (result == ncclSuccess && reference != secondary) {
    result = backend.Memcpy(secondary, reference, partition, stream);
  }
  if (lease != nullptr) {
    const Result ended = lease->fence().EndWrite(stream);
    if (result == ncclSuccess) result = ended;
  }
  ZPP_CHECK(result);
  if (lease != nullptr) slots_.Written(slot);
  stats_.AddDeltaSend(delta);
  ZPP_CHECK(RunIntraNodeStage(context, plan, args, secondary, gathered));
  return staging.Finish();
}

bool WeightDeltas::DamageReferenceForTesting(size_t place, size_t byte) {
  BufferLease* lease = slots_.LeaseAtForTesting(place);
  if (lease == nullptr || byte >= lease->size()) return false;
  static_cast<unsigned char*>(lease->data())[byte] ^= 0x40;
  return true;
}

}  // namespace zpp::engine
