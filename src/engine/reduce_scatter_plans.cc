#include "engine/reduce_scatter_plans.h"

#include <span>
#include <vector>

#include "codec/codec.h"

namespace zpp::engine {
namespace {

using Pieces = std::vector<std::span<const std::byte>>;

codec::Format FormatOf(const plan::Plan& plan, int bits) {
  return codec::Format{bits, plan.block, /*rotate=*/false};
}

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
  Backend& backend = context.backend;
  const int ranks = backend.GroupSize(GroupKind::kWorld);
  const codec::Format format = FormatOf(plan, plan.bits_inter);
  const size_t piece = codec::PieceBytes(args.count, args.dtype, format);
  Staging staging(context);
  std::byte* send = nullptr;
  std::byte* received = nullptr;
  ZPP_CHECK(staging.Take(piece * ranks, &send));
  ZPP_CHECK(staging.Take(piece * ranks, &received));
  for (int r = 0; r < ranks; ++r) {
    ZPP_CHECK(QuantizeChunk(context, args, r, format, send + r * piece, piece));
  }
  ZPP_CHECK(backend.AllToAll(send, received, piece, GroupKind::kWorld, context.stream));
  ZPP_CHECK(backend.DequantizeReduce(PieceList(received, piece, ranks, 1), args.count, format,
                                     ScaleAfterSum(args, ranks),
                                     {args.recv, args.dtype, args.count}, context.stream));
  return staging.Finish();
}

Result RunQgzHierarchicalReduceScatter(PlanContext& context, const plan::Plan& plan,
                                       const ReduceScatterArgs& args) {
  Backend& backend = context.backend;
  const int nodes = backend.GroupSize(GroupKind::kInterNode);
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const codec::Format intra = FormatOf(plan, plan.bits_intra);
  const codec::Format inter = FormatOf(plan, plan.bits_inter);
  const size_t intra_piece = codec::PieceBytes(args.count, args.dtype, intra);
  const size_t inter_piece = codec::PieceBytes(args.count, args.dtype, inter);
  Staging staging(context);
  std::byte* received = nullptr;
  ZPP_CHECK(IntraNodeExchange(
      context, args, intra, nodes,
      [&](int local, int node) { return static_cast<size_t>(node * locals + local); }, staging,
      &received));
  std::byte* node_sums = nullptr;
  std::byte* remote_sums = nullptr;
  ZPP_CHECK(staging.Take(inter_piece * nodes, &node_sums));
  ZPP_CHECK(staging.Take(inter_piece * nodes, &remote_sums));
  ZPP_CHECK(ReduceRequantize(context, received, locals, nodes, args.count, intra, intra_piece,
                             inter, node_sums, inter_piece));
  ZPP_CHECK(
      backend.AllToAll(node_sums, remote_sums, inter_piece, GroupKind::kInterNode, context.stream));
  ZPP_CHECK(backend.DequantizeReduce(PieceList(remote_sums, inter_piece, nodes, 1), args.count,
                                     inter, ScaleAfterSum(args, nodes * locals),
                                     {args.recv, args.dtype, args.count}, context.stream));
  return staging.Finish();
}

Result RunQgzThreeLevelReduceScatter(PlanContext& context, const plan::Plan& plan,
                                     const ReduceScatterArgs& args) {
  Backend& backend = context.backend;
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const int nodes_per_rack = backend.GroupSize(GroupKind::kIntraRack);
  const int racks = backend.GroupSize(GroupKind::kInterRack);
  const int nodes = nodes_per_rack * racks;
  const codec::Format intra = FormatOf(plan, plan.bits_intra);
  const codec::Format inter = FormatOf(plan, plan.bits_inter);
  const size_t intra_piece = codec::PieceBytes(args.count, args.dtype, intra);
  const size_t inter_piece = codec::PieceBytes(args.count, args.dtype, inter);
  Staging staging(context);
  // Stage 1: destinations are all nodes, ordered node-in-rack major so that stage 2 sends
  // contiguous runs: destination d = position x racks + rack, node = rack x per_rack + position.
  std::byte* received = nullptr;
  ZPP_CHECK(IntraNodeExchange(
      context, args, intra, nodes,
      [&](int local, int d) {
        const int position = d / racks;
        const int rack = d % racks;
        return static_cast<size_t>((rack * nodes_per_rack + position) * locals + local);
      },
      staging, &received));
  std::byte* node_sums = nullptr;
  std::byte* rack_received = nullptr;
  ZPP_CHECK(staging.Take(inter_piece * nodes, &node_sums));
  ZPP_CHECK(staging.Take(inter_piece * nodes, &rack_received));
  ZPP_CHECK(ReduceRequantize(context, received, locals, nodes, args.count, intra, intra_piece,
                             inter, node_sums, inter_piece));
  // Stage 2: to the node at each position of this rack, the sums for that position in every
  // rack. rack_received[position][rack] is then that node's sum for (rack, my position).
  ZPP_CHECK(backend.AllToAll(node_sums, rack_received, inter_piece * racks, GroupKind::kIntraRack,
                             context.stream));
  std::byte* rack_sums = nullptr;
  std::byte* remote_sums = nullptr;
  ZPP_CHECK(staging.Take(inter_piece * racks, &rack_sums));
  ZPP_CHECK(staging.Take(inter_piece * racks, &remote_sums));
  ZPP_CHECK(ReduceRequantize(context, rack_received, nodes_per_rack, racks, args.count, inter,
                             inter_piece, inter, rack_sums, inter_piece));
  // Stage 3: one rack sum to each rack.
  ZPP_CHECK(
      backend.AllToAll(rack_sums, remote_sums, inter_piece, GroupKind::kInterRack, context.stream));
  ZPP_CHECK(backend.DequantizeReduce(PieceList(remote_sums, inter_piece, racks, 1), args.count,
                                     inter, ScaleAfterSum(args, nodes * locals),
                                     {args.recv, args.dtype, args.count}, context.stream));
  return staging.Finish();
}

}  // namespace zpp::engine
