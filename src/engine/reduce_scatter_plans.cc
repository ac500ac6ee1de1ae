#include "engine/reduce_scatter_plans.h"

#include "codec/codec.h"

namespace zpp::engine {
namespace {

// One quantization level of a plan: its format and the bytes of one chunk's piece.
struct Level {
  codec::Format format;
  size_t piece = 0;
};

Level LevelOf(const plan::Plan& plan, int bits, const ReduceScatterArgs& args) {
  const codec::Format format{bits, plan.block, /*rotate=*/false};
  return {format, codec::PieceBytes(args.count, args.dtype, format)};
}

// Every chunk of the input quantized in one batch: item i of `map` (`from` in chunks, `to` in
// pieces) takes chunk from(i) into piece to(i) of `pieces`.
Result QuantizeChunks(PlanContext& context, const ReduceScatterArgs& args, const Level& level,
                      codec::BatchMap map, std::byte* pieces) {
  const int ranks = context.backend.GroupSize(GroupKind::kWorld);
  for (int k = 0; k < codec::BatchMap::kDigits; ++k) {
    map.from[k] *= args.count;
    map.to[k] *= level.piece;
  }
  return context.backend.QuantizeBatch({args.send, args.dtype, args.count * ranks}, args.count, map,
                                       level.format, codec::Rounding{},
                                       {pieces, level.piece * ranks}, context.stream);
}

// Stage one of the hierarchical plans: after it, `received[peer][d]` (d over `destinations`
// pieces) is local peer `peer`'s piece of the chunk of destination d of this rank's local rank,
// destinations in node order. `chunks` maps (local, d), as item local x destinations + d, to
// the input chunk of that destination (BatchMap in chunk and piece units). `send` and
// `received` hold intra.piece x destinations x locals bytes.
Result IntraNodeExchange(PlanContext& context, const ReduceScatterArgs& args, const Level& intra,
                         int destinations, const codec::BatchMap& chunks, std::byte* send,
                         std::byte* received) {
  ZPP_CHECK(QuantizeChunks(context, args, intra, chunks, send));
  return context.backend.AllToAll(send, received, intra.piece * destinations, GroupKind::kIntraNode,
                                  context.stream);
}

// Sums, for every destination d, the `peers` pieces received[*][d] and requantizes each sum in
// `out` into out_pieces[d], in one batch.
Result ReduceRequantize(PlanContext& context, const std::byte* received, int peers,
                        int destinations, size_t count, const Level& in, const Level& out,
                        std::byte* out_pieces) {
  const codec::ReduceBatch batch{static_cast<uint32_t>(destinations), static_cast<uint32_t>(peers),
                                 in.piece, in.piece * destinations};
  return context.backend.DequantizeReduceRequantizeBatch(
      {received, in.piece * destinations * peers}, batch, count, in.format, out.format,
      codec::Rounding{}, {out_pieces, out.piece * destinations}, context.stream);
}

// The hierarchical plans' buffers, all taken before any work is enqueued: a buffer the pool
// cannot give then fails the call before this rank enters a collective its peers wait in.
struct StageBuffers {
  std::byte* send = nullptr;       // stage one's quantized chunks
  std::byte* received = nullptr;   // and what the intra-node exchange brings
  std::byte* node_sums = nullptr;  // this node's sum per destination, requantized
};

Result TakeStageBuffers(Staging& staging, const Level& intra, const Level& inter, int destinations,
                        int locals, StageBuffers* buffers) {
  const size_t exchange = intra.piece * destinations * locals;
  ZPP_CHECK(staging.Take(exchange, &buffers->send));
  ZPP_CHECK(staging.Take(exchange, &buffers->received));
  return staging.Take(inter.piece * destinations, &buffers->node_sums);
}

// The residuals' format: int8 in blocks of the plan's, unrotated (codec::Feedback).
codec::Format ResidualFormat(const plan::Plan& plan) { return {8, plan.block, false}; }

// ReduceRequantize with error feedback: the residual lease is written (read, then rewritten)
// under its fence, on the plan's stream, whatever stream the same call used last step.
Result ReduceRequantizeFeedback(PlanContext& context, const std::byte* received, int peers,
                                int destinations, size_t count, const Level& in, const Level& out,
                                const codec::Format& residual_format,
                                const StepSlots::Slot& feedback, std::byte* out_pieces) {
  const codec::ReduceBatch batch{static_cast<uint32_t>(destinations), static_cast<uint32_t>(peers),
                                 in.piece, in.piece * destinations};
  const size_t residual_bytes =
      codec::PieceBytes(count, ncclFloat32, residual_format) * destinations;
  BufferLease& lease = *feedback.lease;
  ZPP_CHECK(lease.fence().BeginWrite(context.stream));
  const Result result = context.backend.DequantizeReduceRequantizeFeedbackBatch(
      {received, in.piece * destinations * peers}, batch, count, in.format, out.format,
      codec::Rounding{}, {out_pieces, out.piece * destinations}, residual_format, feedback.valid,
      {static_cast<std::byte*>(lease.data()), residual_bytes}, context.stream);
  ZPP_CHECK(lease.fence().EndWrite(context.stream));
  return result;
}

// The hierarchical plans' first two stages: the intra-node exchange (see IntraNodeExchange),
// then each destination's sum over this node, requantized at `inter` into node_sums[d] (with
// `feedback`'s residual when it has one).
Result NodeSums(PlanContext& context, const plan::Plan& plan, const ReduceScatterArgs& args,
                const Level& intra, const Level& inter, int destinations,
                const codec::BatchMap& chunks, const StageBuffers& buffers,
                const StepSlots::Slot* feedback) {
  const int locals = context.backend.GroupSize(GroupKind::kIntraNode);
  ZPP_CHECK(IntraNodeExchange(context, args, intra, destinations, chunks, buffers.send,
                              buffers.received));
  if (feedback != nullptr && feedback->lease != nullptr) {
    return ReduceRequantizeFeedback(context, buffers.received, locals, destinations, args.count,
                                    intra, inter, ResidualFormat(plan), *feedback,
                                    buffers.node_sums);
  }
  return ReduceRequantize(context, buffers.received, locals, destinations, args.count, intra, inter,
                          buffers.node_sums);
}

// The last stage of every plan: the `peers` pieces received for this rank's chunk, summed,
// scaled for the op, into the output.
Result SumInto(PlanContext& context, const ReduceScatterArgs& args, const std::byte* received,
               int peers, const Level& level, int ranks) {
  const codec::ReduceBatch batch{1, static_cast<uint32_t>(peers), 0, level.piece};
  return context.backend.DequantizeReduceBatch({received, level.piece * peers}, batch, args.count,
                                               level.format, ScaleAfterSum(args, ranks),
                                               {args.recv, args.dtype, args.count}, context.stream);
}

}  // namespace

float ScaleAfterSum(plan::Reduction reduction, float premul, const void* premul_device, int ranks) {
  switch (reduction) {
    case plan::Reduction::kAvg:
      return 1.0f / static_cast<float>(ranks);
    case plan::Reduction::kPreMulSum:
      // A device scalar is applied after the plan (Engine), as sum(s x) = s sum(x).
      return premul_device != nullptr ? 1.0f : premul;
    default:
      return 1.0f;
  }
}

float ScaleAfterSum(const ReduceScatterArgs& args, int ranks) {
  return ScaleAfterSum(args.reduction, args.premul, args.premul_device, ranks);
}

Result RunQgzFlatReduceScatter(PlanContext& context, const plan::Plan& plan,
                               const ReduceScatterArgs& args) {
  const int ranks = context.backend.GroupSize(GroupKind::kWorld);
  const Level level = LevelOf(plan, plan.bits_inter, args);
  Staging staging(context);
  std::byte* send = nullptr;
  std::byte* received = nullptr;
  ZPP_CHECK(staging.Take(level.piece * ranks, &send));
  ZPP_CHECK(staging.Take(level.piece * ranks, &received));
  ZPP_CHECK(QuantizeChunks(context, args, level, codec::BatchMap::Strided(ranks, 1, 1), send));
  ZPP_CHECK(
      context.backend.AllToAll(send, received, level.piece, GroupKind::kWorld, context.stream));
  ZPP_CHECK(SumInto(context, args, received, ranks, level, ranks));
  return staging.Finish();
}

size_t FeedbackBytes(const plan::Plan& plan, const ReduceScatterArgs& args, int nodes) {
  return codec::PieceBytes(args.count, ncclFloat32, ResidualFormat(plan)) *
         static_cast<size_t>(nodes);
}

Result RunQgzHierarchicalReduceScatter(PlanContext& context, const plan::Plan& plan,
                                       const ReduceScatterArgs& args,
                                       const StepSlots::Slot* feedback) {
  Backend& backend = context.backend;
  const int nodes = backend.GroupSize(GroupKind::kInterNode);
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const Level intra = LevelOf(plan, plan.bits_intra, args);
  const Level inter = LevelOf(plan, plan.bits_inter, args);
  Staging staging(context);
  StageBuffers buffers;
  std::byte* remote_sums = nullptr;
  ZPP_CHECK(TakeStageBuffers(staging, intra, inter, nodes, locals, &buffers));
  ZPP_CHECK(staging.Take(inter.piece * nodes, &remote_sums));
  // Item local x nodes + node takes chunk node x locals + local.
  codec::BatchMap chunks;
  chunks.radix[1] = static_cast<uint32_t>(locals);
  chunks.radix[2] = static_cast<uint32_t>(nodes);
  chunks.from[1] = 1;
  chunks.from[2] = static_cast<uint64_t>(locals);
  chunks.to[1] = static_cast<uint64_t>(nodes);
  chunks.to[2] = 1;
  ZPP_CHECK(NodeSums(context, plan, args, intra, inter, nodes, chunks, buffers, feedback));
  // One node sum to each node: remote_sums[node] is that node's sum for this rank's chunk.
  ZPP_CHECK(backend.AllToAll(buffers.node_sums, remote_sums, inter.piece, GroupKind::kInterNode,
                             context.stream));
  ZPP_CHECK(SumInto(context, args, remote_sums, nodes, inter, nodes * locals));
  return staging.Finish();
}

Result RunQgzThreeLevelReduceScatter(PlanContext& context, const plan::Plan& plan,
                                     const ReduceScatterArgs& args) {
  Backend& backend = context.backend;
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const int nodes_per_rack = backend.GroupSize(GroupKind::kIntraRack);
  const int racks = backend.GroupSize(GroupKind::kInterRack);
  const int nodes = nodes_per_rack * racks;
  const Level intra = LevelOf(plan, plan.bits_intra, args);
  const Level inter = LevelOf(plan, plan.bits_inter, args);
  Staging staging(context);
  StageBuffers buffers;
  std::byte* rack_received = nullptr;
  std::byte* rack_sums = nullptr;
  std::byte* remote_sums = nullptr;
  ZPP_CHECK(TakeStageBuffers(staging, intra, inter, nodes, locals, &buffers));
  ZPP_CHECK(staging.Take(inter.piece * nodes, &rack_received));
  ZPP_CHECK(staging.Take(inter.piece * racks, &rack_sums));
  ZPP_CHECK(staging.Take(inter.piece * racks, &remote_sums));
  // Stage 1: destinations are all nodes, ordered node-in-rack major so that stage 2 sends
  // contiguous runs: destination d = position x racks + rack, node = rack x per_rack + position.
  // Item (local, position, rack) takes chunk (rack x per_rack + position) x locals + local.
  codec::BatchMap chunks;
  chunks.radix[0] = static_cast<uint32_t>(locals);
  chunks.radix[1] = static_cast<uint32_t>(nodes_per_rack);
  chunks.radix[2] = static_cast<uint32_t>(racks);
  chunks.from[0] = 1;
  chunks.from[1] = static_cast<uint64_t>(locals);
  chunks.from[2] = static_cast<uint64_t>(nodes_per_rack) * locals;
  chunks.to[0] = static_cast<uint64_t>(nodes);
  chunks.to[1] = static_cast<uint64_t>(racks);
  chunks.to[2] = 1;
  ZPP_CHECK(NodeSums(context, plan, args, intra, inter, nodes, chunks, buffers, nullptr));
  // Stage 2: to the node at each position of this rack, the sums for that position in every
  // rack. rack_received[position][rack] is then that node's sum for (rack, my position).
  ZPP_CHECK(backend.AllToAll(buffers.node_sums, rack_received, inter.piece * racks,
                             GroupKind::kIntraRack, context.stream));
  ZPP_CHECK(ReduceRequantize(context, rack_received, nodes_per_rack, racks, args.count, inter,
                             inter, rack_sums));
  // Stage 3: one rack sum to each rack.
  ZPP_CHECK(
      backend.AllToAll(rack_sums, remote_sums, inter.piece, GroupKind::kInterRack, context.stream));
  ZPP_CHECK(SumInto(context, args, remote_sums, racks, inter, nodes * locals));
  return staging.Finish();
}

}  // namespace zpp::engine
