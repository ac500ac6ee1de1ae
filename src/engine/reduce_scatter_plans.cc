#include "engine/reduce_scatter_plans.h"

#include <span>
#include <vector>

#include "codec/codec.h"

namespace zpp::engine {
namespace {

using Pieces = std::vector<std::span<const std::byte>>;

// Quantizes chunk `chunk` of the input into `piece`.
Result QuantizeChunk(PlanContext& context, const ReduceScatterArgs& args, size_t chunk,
                     const codec::Format& format, std::byte* piece, size_t piece_bytes) {
  const size_t element = plan::DtypeBytes(args.dtype);
  const void* data = static_cast<const std::byte*>(args.send) + chunk * args.count * element;
  return context.backend.Quantize({data, args.dtype, args.count}, format, codec::Rounding{},
                                  {piece, piece_bytes}, context.stream);
}

// `count` pieces of `piece_bytes` starting at `first`, `stride` pieces apart.
Pieces PieceList(const std::byte* first, size_t piece_bytes, int count, size_t stride) {
  Pieces pieces;
  pieces.reserve(count);
  for (int i = 0; i < count; ++i)
    pieces.emplace_back(first + i * stride * piece_bytes, piece_bytes);
  return pieces;
}

// Stage one of the hierarchical plans: after it, `received[peer][d]` (d over `destinations`
// pieces) is local peer `peer`'s piece of the chunk of destination d of this rank's local rank,
// destinations in node order. `chunk_of(local, d)` is the input chunk of that destination.
template <typename ChunkOf>
Result IntraNodeExchange(PlanContext& context, const ReduceScatterArgs& args,
                         const codec::Format& format, int destinations, ChunkOf chunk_of,
                         Staging& staging, std::byte** received) {
  Backend& backend = context.backend;
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const size_t piece = codec::PieceBytes(args.count, args.dtype, format);
  std::byte* send = nullptr;
  ZPP_CHECK(staging.Take(piece * destinations * locals, &send));
  ZPP_CHECK(staging.Take(piece * destinations * locals, received));
  for (int local = 0; local < locals; ++local) {
    for (int d = 0; d < destinations; ++d) {
      ZPP_CHECK(QuantizeChunk(context, args, chunk_of(local, d), format,
                              send + (local * destinations + d) * piece, piece));
    }
  }
  return backend.AllToAll(send, *received, piece * destinations, GroupKind::kIntraNode,
                          context.stream);
}

// Sums, for every destination d, the locals' pieces received[*][d] and requantizes the sum in
// `out_format` into out[d].
Result ReduceRequantize(PlanContext& context, const std::byte* received, int locals,
                        int destinations, size_t count, const codec::Format& in_format,
                        size_t in_piece, const codec::Format& out_format, std::byte* out,
                        size_t out_piece) {
  for (int d = 0; d < destinations; ++d) {
    ZPP_CHECK(context.backend.DequantizeReduceRequantize(
        PieceList(received + d * in_piece, in_piece, locals, destinations), count, in_format,
        out_format, codec::Rounding{}, {out + d * out_piece, out_piece}, context.stream));
  }
  return ncclSuccess;
}

// One quantization level of a plan: its format and the bytes of one chunk's piece.
struct Level {
  codec::Format format;
  size_t piece = 0;
};

Level LevelOf(const plan::Plan& plan, int bits, const ReduceScatterArgs& args) {
  const codec::Format format{bits, plan.block, /*rotate=*/false};
  return {format, codec::PieceBytes(args.count, args.dtype, format)};
}

// The hierarchical plans' first two stages: the intra-node exchange (see IntraNodeExchange),
// then each destination's sum over this node, requantized at `inter` into node_sums[d].
template <typename ChunkOf>
Result NodeSums(PlanContext& context, const ReduceScatterArgs& args, const Level& intra,
                const Level& inter, int destinations, ChunkOf chunk_of, Staging& staging,
                std::byte** node_sums) {
  const int locals = context.backend.GroupSize(GroupKind::kIntraNode);
  std::byte* received = nullptr;
  ZPP_CHECK(
      IntraNodeExchange(context, args, intra.format, destinations, chunk_of, staging, &received));
  ZPP_CHECK(staging.Take(inter.piece * destinations, node_sums));
  return ReduceRequantize(context, received, locals, destinations, args.count, intra.format,
                          intra.piece, inter.format, *node_sums, inter.piece);
}

// The last stage of every plan: the `peers` pieces received for this rank's chunk, summed,
// scaled for the op, into the output.
Result SumInto(PlanContext& context, const ReduceScatterArgs& args, const std::byte* received,
               int peers, const Level& level, int ranks) {
  return context.backend.DequantizeReduce(PieceList(received, level.piece, peers, 1), args.count,
                                          level.format, ScaleAfterSum(args, ranks),
                                          {args.recv, args.dtype, args.count}, context.stream);
}

}  // namespace

float ScaleAfterSum(const ReduceScatterArgs& args, int ranks) {
  switch (args.reduction) {
    case plan::Reduction::kAvg:
      return 1.0f / static_cast<float>(ranks);
    case plan::Reduction::kPreMulSum:
      // A device scalar is applied after the plan (Engine), as sum(s x) = s sum(x).
      return args.premul_device != nullptr ? 1.0f : args.premul;
    default:
      return 1.0f;
  }
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
  for (int r = 0; r < ranks; ++r) {
    ZPP_CHECK(QuantizeChunk(context, args, r, level.format, send + r * level.piece, level.piece));
  }
  ZPP_CHECK(
      context.backend.AllToAll(send, received, level.piece, GroupKind::kWorld, context.stream));
  ZPP_CHECK(SumInto(context, args, received, ranks, level, ranks));
  return staging.Finish();
}

Result RunQgzHierarchicalReduceScatter(PlanContext& context, const plan::Plan& plan,
                                       const ReduceScatterArgs& args) {
  Backend& backend = context.backend;
  const int nodes = backend.GroupSize(GroupKind::kInterNode);
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const Level intra = LevelOf(plan, plan.bits_intra, args);
  const Level inter = LevelOf(plan, plan.bits_inter, args);
  Staging staging(context);
  std::byte* node_sums = nullptr;
  ZPP_CHECK(NodeSums(
      context, args, intra, inter, nodes,
      [&](int local, int node) { return static_cast<size_t>(node * locals + local); }, staging,
      &node_sums));
  // One node sum to each node: remote_sums[node] is that node's sum for this rank's chunk.
  std::byte* remote_sums = nullptr;
  ZPP_CHECK(staging.Take(inter.piece * nodes, &remote_sums));
  ZPP_CHECK(
      backend.AllToAll(node_sums, remote_sums, inter.piece, GroupKind::kInterNode, context.stream));
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
  // Stage 1: destinations are all nodes, ordered node-in-rack major so that stage 2 sends
  // contiguous runs: destination d = position x racks + rack, node = rack x per_rack + position.
  std::byte* node_sums = nullptr;
  ZPP_CHECK(NodeSums(
      context, args, intra, inter, nodes,
      [&](int local, int d) {
        const int position = d / racks;
        const int rack = d % racks;
        return static_cast<size_t>((rack * nodes_per_rack + position) * locals + local);
      },
      staging, &node_sums));
  // Stage 2: to the node at each position of this rack, the sums for that position in every
  // rack. rack_received[position][rack] is then that node's sum for (rack, my position).
  std::byte* rack_received = nullptr;
  ZPP_CHECK(staging.Take(inter.piece * nodes, &rack_received));
  ZPP_CHECK(backend.AllToAll(node_sums, rack_received, inter.piece * racks, GroupKind::kIntraRack,
                             context.stream));
  std::byte* rack_sums = nullptr;
  std::byte* remote_sums = nullptr;
  ZPP_CHECK(staging.Take(inter.piece * racks, &rack_sums));
  ZPP_CHECK(staging.Take(inter.piece * racks, &remote_sums));
  ZPP_CHECK(ReduceRequantize(context, rack_received, nodes_per_rack, racks, args.count,
                             inter.format, inter.piece, inter.format, rack_sums, inter.piece));
  // Stage 3: one rack sum to each rack.
  ZPP_CHECK(
      backend.AllToAll(rack_sums, remote_sums, inter.piece, GroupKind::kInterRack, context.stream));
  ZPP_CHECK(SumInto(context, args, remote_sums, racks, inter, nodes * locals));
  return staging.Finish();
}

}  // namespace zpp::engine
