#include "engine/allgather_plans.h"

#include "codec/codec.h"
#include "codec/element_io.h"

namespace zpp::engine {
namespace {

codec::Format WeightFormat(const plan::Plan& plan) {
  return codec::Format{plan.bits_inter, plan.block, plan.rotate};
}

// The bytes one rank contributes to the gathers: a piece, or the raw shard when unquantized.
size_t ContributionBytes(const plan::Plan& plan, const AllGatherArgs& args) {
  if (plan.bits_inter == 0) return args.count * NcclTypeBytes(args.dtype);
  return codec::PieceBytes(args.count, args.dtype, WeightFormat(plan));
}

}  // namespace

Result RunQwzFlatAllGather(PlanContext& context, const plan::Plan& plan,
                           const AllGatherArgs& args) {
  Backend& backend = context.backend;
  const codec::Format format = WeightFormat(plan);
  const size_t piece = codec::PieceBytes(args.count, args.dtype, format);
  const int ranks = backend.GroupSize(GroupKind::kWorld);
  Staging staging(context);
  std::byte* mine = nullptr;
  std::byte* all = nullptr;
  ZPP_CHECK(staging.Take(piece, &mine));
  ZPP_CHECK(staging.Take(piece * ranks, &all));
  ZPP_CHECK(backend.Quantize({args.send, args.dtype, args.count}, format, codec::Rounding{},
                             {mine, piece}, context.stream));
  ZPP_CHECK(backend.AllGather(mine, all, piece, GroupKind::kWorld, context.stream));
  ZPP_CHECK(backend.DequantizeBatch({all, piece * ranks}, args.count,
                                    codec::BatchMap::Strided(ranks, piece, args.count), format,
                                    {args.recv, args.dtype, args.count * ranks}, context.stream));
  return staging.Finish();
}

size_t SecondaryPartitionBytes(const Backend& backend, const plan::Plan& plan,
                               const AllGatherArgs& args) {
  return ContributionBytes(plan, args) * backend.GroupSize(GroupKind::kInterNode);
}

size_t IntraNodeGatheredBytes(const Backend& backend, const plan::Plan& plan,
                              const AllGatherArgs& args) {
  return SecondaryPartitionBytes(backend, plan, args) * backend.GroupSize(GroupKind::kIntraNode);
}

// The intra-node stage into `gathered`, then every shard into the output.
Result RunIntraNodeStage(PlanContext& context, const plan::Plan& plan, const AllGatherArgs& args,
                         const std::byte* secondary, std::byte* gathered) {
  Backend& backend = context.backend;
  const size_t contribution = ContributionBytes(plan, args);
  const int nodes = backend.GroupSize(GroupKind::kInterNode);
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const size_t secondary_bytes = contribution * nodes;
  ZPP_CHECK(backend.AllGather(secondary, gathered, secondary_bytes, GroupKind::kIntraNode,
                              context.stream));
  // gathered[local][node] holds the shard of rank node x locals + local (contiguous nodes): one
  // batch places them all, item local x nodes + node.
  codec::BatchMap places;
  places.radix[1] = static_cast<uint32_t>(locals);
  places.radix[2] = static_cast<uint32_t>(nodes);
  places.from[1] = nodes * contribution;
  places.from[2] = contribution;
  const uint64_t shard_units = plan.bits_inter != 0 ? args.count : contribution;
  places.to[1] = shard_units;
  places.to[2] = locals * shard_units;
  const std::span<const std::byte> all{gathered, secondary_bytes * locals};
  if (plan.bits_inter != 0) {
    return backend.DequantizeBatch(all, args.count, places, WeightFormat(plan),
                                   {args.recv, args.dtype, args.count * nodes * locals},
                                   context.stream);
  }
  return backend.CopyBatch(all, {static_cast<std::byte*>(args.recv), contribution * nodes * locals},
                           contribution, places, context.stream);
}

Result RunHierarchicalAllGather(PlanContext& context, const plan::Plan& plan,
                                const AllGatherArgs& args, std::byte* secondary) {
  Backend& backend = context.backend;
  const size_t contribution = ContributionBytes(plan, args);
  const void* mine = args.send;
  // Both stages' buffers before anything is enqueued: a pool that cannot give one fails the
  // call before this rank enters a collective its peers wait in.
  Staging staging(context);
  std::byte* piece = nullptr;
  std::byte* gathered = nullptr;
  if (plan.bits_inter != 0) ZPP_CHECK(staging.Take(contribution, &piece));
  ZPP_CHECK(staging.Take(IntraNodeGatheredBytes(backend, plan, args), &gathered));
  if (plan.bits_inter != 0) {
    ZPP_CHECK(backend.Quantize({args.send, args.dtype, args.count}, WeightFormat(plan),
                               codec::Rounding{}, {piece, contribution}, context.stream));
    mine = piece;
  }
  ZPP_CHECK(
      backend.AllGather(mine, secondary, contribution, GroupKind::kInterNode, context.stream));
  ZPP_CHECK(RunIntraNodeStage(context, plan, args, secondary, gathered));
  return staging.Finish();
}

Result RunIntraNodeAllGather(PlanContext& context, const plan::Plan& plan,
                             const AllGatherArgs& args, const std::byte* secondary) {
  Staging staging(context);
  std::byte* gathered = nullptr;
  ZPP_CHECK(staging.Take(IntraNodeGatheredBytes(context.backend, plan, args), &gathered));
  ZPP_CHECK(RunIntraNodeStage(context, plan, args, secondary, gathered));
  return staging.Finish();
}

}  // namespace zpp::engine
