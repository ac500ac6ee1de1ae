#include "engine/all_reduce_plans.h"

#include <vector>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "common/nccl_types.h"
#include "engine/reduce_scatter_plans.h"
#include "plan/planner.h"

namespace zpp::engine {
namespace {

// The residuals' format, and the node's shares' before the feedback kernel: int8 in the plan's
// blocks, unrotated (the feedback kernel's).
codec::Format Int8Format(const plan::Plan& plan) { return {8, plan.block, false}; }

// Where a plan over `padded` elements reads and writes: args' buffers when world divides count,
// else staging (taken with the plan's other buffers, before any collective) whose input tail is
// zero: zeros add nothing to a sum, and quantize to a zero scale.
struct PaddedBuffers {
  const void* input = nullptr;
  void* output = nullptr;
};

Result TakePadded(PlanContext& context, Staging& staging, const AllReduceArgs& args, size_t padded,
                  PaddedBuffers* buffers) {
  buffers->input = args.send;
  buffers->output = args.recv;
  if (padded == args.count) return ncclSuccess;
  const size_t element = NcclTypeBytes(args.dtype);
  std::byte* input = nullptr;
  std::byte* output = nullptr;
  ZPP_CHECK(staging.Take(padded * element, &input));
  ZPP_CHECK(staging.Take(padded * element, &output));
  ZPP_CHECK(context.backend.Memcpy(input, args.send, args.count * element, context.stream));
  const std::vector<std::byte> zeros((padded - args.count) * element);
  ZPP_CHECK(context.backend.CopyFromHost(input + args.count * element, zeros.data(), zeros.size(),
                                         context.stream));
  buffers->input = input;
  buffers->output = output;
  return ncclSuccess;
}

// The first count elements of a padded output into args.recv.
Result CopyOut(PlanContext& context, const AllReduceArgs& args, const PaddedBuffers& buffers) {
  if (buffers.output == args.recv) return ncclSuccess;
  return context.backend.Memcpy(args.recv, buffers.output, args.count * NcclTypeBytes(args.dtype),
                                context.stream);
}

}  // namespace

float AllReduceScale(const AllReduceArgs& args, int world) {
  return ScaleAfterSum(args.reduction, args.premul, args.premul_device, world);
}

size_t QarFeedbackBytes(const plan::Plan& plan, const AllReduceArgs& args, int nodes, int world) {
  const size_t share = plan::AllReduceShare(args.count, world);
  return codec::PieceBytes(share, ncclFloat32, Int8Format(plan)) * static_cast<size_t>(nodes + 1);
}

Result RunQarHierarchicalAllReduce(PlanContext& context, const plan::Plan& plan,
                                   const AllReduceArgs& args, const StepSlots::Slot* feedback) {
  Backend& backend = context.backend;
  // The flat plan has no intra-node stage: its inter-node group is the world (no sub-communicator
  // is split for it on GPUs).
  const bool flat = plan.kind == plan::PlanKind::kQarFlatAllReduce;
  const GroupKind across = flat ? GroupKind::kWorld : GroupKind::kInterNode;
  const int nodes = backend.GroupSize(across);
  const int locals = flat ? 1 : backend.GroupSize(GroupKind::kIntraNode);
  const int world = nodes * locals;
  const size_t element = NcclTypeBytes(args.dtype);
  const size_t share = plan::AllReduceShare(args.count, world);  // the elements each rank owns
  const size_t chunk = share * static_cast<size_t>(nodes);       // each local rank's, per node
  const size_t padded = chunk * static_cast<size_t>(locals);
  const codec::Format format{plan.bits_inter, plan.block, plan.rotate};
  const size_t piece = codec::PieceBytes(share, args.dtype, format);
  const bool fed = feedback != nullptr && feedback->lease != nullptr;
  const codec::Format int8 = Int8Format(plan);
  const size_t local_piece = codec::PieceBytes(share, args.dtype, int8);
  const size_t residual_piece = codec::PieceBytes(share, ncclFloat32, int8);

  // Every buffer before the first collective: a refusal then passes the call through.
  Staging staging(context);
  PaddedBuffers io;
  std::byte* node_chunk = nullptr;  // this node's sum of chunk l; later chunk l all-reduced
  std::byte* sent = nullptr;        // pieces of node_chunk's shares; later the owner's piece
  std::byte* received = nullptr;    // every node's piece of my share; later every owner's piece
  std::byte* owned = nullptr;       // my share summed over all nodes, scaled, fp32
  std::byte* local_pieces = nullptr;
  if (!flat) ZPP_CHECK(staging.Take(chunk * element, &node_chunk));
  ZPP_CHECK(staging.Take(piece * nodes, &sent));
  ZPP_CHECK(staging.Take(piece * nodes, &received));
  if (fed) {
    ZPP_CHECK(staging.Take(local_piece * nodes, &local_pieces));
  } else {
    ZPP_CHECK(staging.Take(share * sizeof(float), &owned));
  }
  ZPP_CHECK(TakePadded(context, staging, args, padded, &io));

  // Inside the node, exact: local rank l gets the node's sum of chunk l (with feedback already
  // scaled for the op: the feedback kernel sums without a scale). Flat: the chunk is the input,
  // in the output's place, scaled there with feedback (a scalar of the dtype: exact for fp32 and
  // for powers of two, within the dtype's rounding of 1/world otherwise).
  if (flat) {
    node_chunk = static_cast<std::byte*>(io.output);
    if (node_chunk != io.input) {
      ZPP_CHECK(backend.Memcpy(node_chunk, io.input, chunk * element, context.stream));
    }
    if (const float scale = AllReduceScale(args, world); fed && scale != 1.0f) {
      std::byte scalar_bytes[sizeof(float)] = {};
      codec::StoreElements(scalar_bytes, args.dtype, 0, 1, &scale);
      std::byte* scalar = nullptr;
      ZPP_CHECK(staging.Take(sizeof(float), &scalar));
      ZPP_CHECK(backend.CopyFromHost(scalar, scalar_bytes, element, context.stream));
      ZPP_CHECK(
          backend.ScaleByDeviceScalar({node_chunk, args.dtype, chunk}, scalar, context.stream));
    }
  } else {
    ZPP_CHECK(backend.ReduceScatter(io.input, node_chunk, chunk, args.dtype,
                                    fed ? AllReduceScale(args, world) : 1.0f, GroupKind::kIntraNode,
                                    context.stream));
  }
  // Across nodes, among local rank l's peers: share j of the chunk to node j, quantized.
  const codec::ConstTensorView chunk_in{node_chunk, args.dtype, chunk};
  const codec::ReduceBatch to_nodes{static_cast<uint32_t>(nodes), 1, local_piece, 0};
  const codec::ReduceBatch from_nodes{1, static_cast<uint32_t>(nodes), 0, piece};
  // With feedback: the feedback kernel sums pieces, so the node's exact shares are first encoded
  // at int8 (locally: no byte crosses a link), whose loss, a fraction of int8's, is the one
  // error not fed back. The residuals sit in the slot's lease: an int8 piece per destination
  // node's share, then one for the owner's sum.
  std::span<std::byte> residuals;
  if (fed) {
    residuals = {static_cast<std::byte*>(feedback->lease->data()),
                 residual_piece * static_cast<size_t>(nodes + 1)};
    ZPP_CHECK(feedback->lease->fence().BeginWrite(context.stream));
    ZPP_CHECK(backend.QuantizeBatch(
        chunk_in, share, codec::BatchMap::Strided(nodes, share, local_piece), int8,
        codec::Rounding{}, {local_pieces, local_piece * nodes}, context.stream));
    ZPP_CHECK(backend.DequantizeReduceRequantizeFeedbackBatch(
        {local_pieces, local_piece * nodes}, to_nodes, share, int8, format, codec::Rounding{},
        {sent, piece * nodes}, int8, feedback->valid, residuals.first(residual_piece * nodes),
        context.stream));
  } else {
    ZPP_CHECK(backend.QuantizeBatch(chunk_in, share, codec::BatchMap::Strided(nodes, share, piece),
                                    format, codec::Rounding{}, {sent, piece * nodes},
                                    context.stream));
  }
  ZPP_CHECK(backend.AllToAll(sent, received, piece, across, context.stream));
  // The owners' sums back to every node. The owner decodes its own piece like everyone else:
  // every rank of the inter-node group ends with the same bytes of the whole chunk.
  if (fed) {
    ZPP_CHECK(backend.DequantizeReduceRequantizeFeedbackBatch(
        {received, piece * nodes}, from_nodes, share, format, format, codec::Rounding{},
        {sent, piece}, int8, feedback->valid, residuals.last(residual_piece), context.stream));
    ZPP_CHECK(feedback->lease->fence().EndWrite(context.stream));
  } else {
    ZPP_CHECK(backend.DequantizeReduceBatch({received, piece * nodes}, from_nodes, share, format,
                                            AllReduceScale(args, world),
                                            {owned, ncclFloat32, share}, context.stream));
    ZPP_CHECK(backend.Quantize({owned, ncclFloat32, share}, format, codec::Rounding{},
                               {sent, piece}, context.stream));
  }
  ZPP_CHECK(backend.AllGather(sent, received, piece, across, context.stream));
  ZPP_CHECK(backend.DequantizeBatch({received, piece * nodes}, share,
                                    codec::BatchMap::Strided(nodes, piece, share), format,
                                    {node_chunk, args.dtype, chunk}, context.stream));
  // Inside the node, exact: every local rank's chunk to every local rank.
  if (!flat) {
    ZPP_CHECK(backend.AllGather(node_chunk, io.output, chunk * element, GroupKind::kIntraNode,
                                context.stream));
  }
  ZPP_CHECK(CopyOut(context, args, io));
  return staging.Finish();
}

Result RunPlainAllReduce(PlanContext& context, const AllReduceArgs& args) {
  Backend& backend = context.backend;
  const int world = backend.GroupSize(GroupKind::kWorld);
  const size_t element = NcclTypeBytes(args.dtype);
  const size_t share = (args.count + world - 1) / world;  // no codec: no whole runs needed
  const size_t padded = share * static_cast<size_t>(world);
  Staging staging(context);
  PaddedBuffers io;
  std::byte* mine = nullptr;
  ZPP_CHECK(staging.Take(share * element, &mine));
  ZPP_CHECK(TakePadded(context, staging, args, padded, &io));
  ZPP_CHECK(backend.ReduceScatter(io.input, mine, share, args.dtype, AllReduceScale(args, world),
                                  GroupKind::kWorld, context.stream));
  ZPP_CHECK(backend.AllGather(mine, io.output, share * element, GroupKind::kWorld, context.stream));
  ZPP_CHECK(CopyOut(context, args, io));
  return staging.Finish();
}

}  // namespace zpp::engine
