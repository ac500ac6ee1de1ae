#include "engine/all_reduce_plans.h"

#include <span>
#include <vector>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "engine/reduce_scatter_plans.h"
#include "kernels/math/nccl_types.h"
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

namespace {

// The compressed all-reduce's sizes: elements, or bytes where named so. The flat plan has no
// intra-node stage: its inter-node group is the world (no sub-communicator is split for it on
// GPUs).
struct QarGeometry {
  QarGeometry(Backend& backend, const plan::Plan& plan, const AllReduceArgs& args,
              bool with_feedback)
      : flat(plan.kind == plan::PlanKind::kQarFlatAllReduce),
        fed(with_feedback),
        across(flat ? GroupKind::kWorld : GroupKind::kInterNode),
        nodes(backend.GroupSize(across)),
        world(nodes * (flat ? 1 : backend.GroupSize(GroupKind::kIntraNode))),
        element(NcclTypeBytes(args.dtype)),
        share(plan::AllReduceShare(args.count, world)),
        chunk(share * static_cast<size_t>(nodes)),
        padded(chunk * static_cast<size_t>(world / nodes)),
        format{plan.bits_inter, plan.block, plan.rotate},
        int8(Int8Format(plan)),
        piece(codec::PieceBytes(share, args.dtype, format)),
        local_piece(codec::PieceBytes(share, args.dtype, int8)),
        residual_piece(codec::PieceBytes(share, ncclFloat32, int8)) {}
  const bool flat;
  const bool fed;  // with error feedback
  const GroupKind across;
  const int nodes;
  const int world;
  const size_t element;
  const size_t share;   // the elements each rank owns
  const size_t chunk;   // each local rank's, per node
  const size_t padded;  // the whole, padded to world shares
  const codec::Format format;
  const codec::Format int8;
  const size_t piece;           // bytes of a share at the inter-node format
  const size_t local_piece;     // bytes of a share at int8 (with feedback)
  const size_t residual_piece;  // bytes of a share's fp32 residual at int8
};

struct QarBuffers {
  PaddedBuffers io;
  std::byte* node_chunk = nullptr;  // this node's sum of chunk l; later chunk l all-reduced
  std::byte* sent = nullptr;        // pieces of node_chunk's shares; later the owner's piece
  std::byte* received = nullptr;    // every node's piece of my share; later every owner's piece
  std::byte* owned = nullptr;       // my share summed over all nodes, scaled, fp32
  std::byte* local_pieces = nullptr;
  std::span<std::byte> residuals;  // with feedback: the slot lease's, one piece per stage
};

// Every buffer before the first collective: a refusal then passes the call through.
Result TakeQarBuffers(PlanContext& context, Staging& staging, const QarGeometry& g,
                      const AllReduceArgs& args, QarBuffers* b) {
  if (!g.flat) ZPP_CHECK(staging.Take(g.chunk * g.element, &b->node_chunk));
  ZPP_CHECK(staging.Take(g.piece * g.nodes, &b->sent));
  ZPP_CHECK(staging.Take(g.piece * g.nodes, &b->received));
  if (g.fed) {
    ZPP_CHECK(staging.Take(g.local_piece * g.nodes, &b->local_pieces));
  } else {
    ZPP_CHECK(staging.Take(g.share * sizeof(float), &b->owned));
  }
  return TakePadded(context, staging, args, g.padded, &b->io);
}

// Inside the node, exact: local rank l gets the node's sum of chunk l (with feedback already
// scaled for the op: the feedback kernel sums without a scale). Flat: the chunk is the input, in
// the output's place, scaled there with feedback (a scalar of the dtype: exact for fp32 and for
// powers of two, within the dtype's rounding of 1/world otherwise).
Result SumInsideTheNode(PlanContext& context, Staging& staging, const QarGeometry& g,
                        const AllReduceArgs& args, QarBuffers& b) {
  Backend& backend = context.backend;
  const float scale = AllReduceScale(args, g.world);
  if (!g.flat) {
    return backend.ReduceScatter(b.io.input, b.node_chunk, g.chunk, args.dtype,
                                 g.fed ? scale : 1.0f, GroupKind::kIntraNode, context.stream);
  }
  b.node_chunk = static_cast<std::byte*>(b.io.output);
  if (b.node_chunk != b.io.input) {
    ZPP_CHECK(backend.Memcpy(b.node_chunk, b.io.input, g.chunk * g.element, context.stream));
  }
  if (!g.fed || scale == 1.0f) return ncclSuccess;
  std::byte scalar_bytes[sizeof(float)] = {};
  codec::StoreElements(scalar_bytes, args.dtype, 0, 1, &scale);
  std::byte* scalar = nullptr;
  ZPP_CHECK(staging.Take(sizeof(float), &scalar));
  ZPP_CHECK(backend.CopyFromHost(scalar, scalar_bytes, g.element, context.stream));
  return backend.ScaleByDeviceScalar({b.node_chunk, args.dtype, g.chunk}, scalar, context.stream);
}

// Across nodes, among local rank l's peers: share j of the chunk to node j, quantized. With
// feedback: the feedback kernel sums pieces, so the node's exact shares are first encoded at int8
// (locally: no byte crosses a link), whose loss, a fraction of int8's, is the one error not fed
// back.
Result SendToTheOwners(PlanContext& context, const QarGeometry& g, const AllReduceArgs& args,
                       const StepSlots::Slot* feedback, QarBuffers& b) {
  Backend& backend = context.backend;
  const codec::ConstTensorView chunk_in{b.node_chunk, args.dtype, g.chunk};
  if (g.fed) {
    const codec::ReduceBatch to_nodes{static_cast<uint32_t>(g.nodes), 1, g.local_piece, 0};
    ZPP_CHECK(backend.QuantizeBatch(
        chunk_in, g.share, codec::BatchMap::Strided(g.nodes, g.share, g.local_piece), g.int8,
        codec::Rounding{}, {b.local_pieces, g.local_piece * g.nodes}, context.stream));
    ZPP_CHECK(backend.DequantizeReduceRequantizeFeedbackBatch(
        {b.local_pieces, g.local_piece * g.nodes}, to_nodes, g.share, g.int8, g.format,
        codec::Rounding{}, {b.sent, g.piece * g.nodes}, g.int8, feedback->valid,
        b.residuals.first(g.residual_piece * g.nodes), context.stream));
  } else {
    ZPP_CHECK(backend.QuantizeBatch(
        chunk_in, g.share, codec::BatchMap::Strided(g.nodes, g.share, g.piece), g.format,
        codec::Rounding{}, {b.sent, g.piece * g.nodes}, context.stream));
  }
  return backend.AllToAll(b.sent, b.received, g.piece, g.across, context.stream);
}

// Each owner's sum of its share over the nodes, requantized into `sent`. The owner decodes its
// own piece like everyone else: every rank of the inter-node group ends with the same bytes.
Result SumAtTheOwners(PlanContext& context, const QarGeometry& g, const AllReduceArgs& args,
                      const StepSlots::Slot* feedback, QarBuffers& b) {
  Backend& backend = context.backend;
  const codec::ReduceBatch from_nodes{1, static_cast<uint32_t>(g.nodes), 0, g.piece};
  if (g.fed) {
    ZPP_CHECK(backend.DequantizeReduceRequantizeFeedbackBatch(
        {b.received, g.piece * g.nodes}, from_nodes, g.share, g.format, g.format, codec::Rounding{},
        {b.sent, g.piece}, g.int8, feedback->valid, b.residuals.last(g.residual_piece),
        context.stream));
    return feedback->lease->fence().EndWrite(context.stream);
  }
  ZPP_CHECK(backend.DequantizeReduceBatch({b.received, g.piece * g.nodes}, from_nodes, g.share,
                                          g.format, AllReduceScale(args, g.world),
                                          {b.owned, ncclFloat32, g.share}, context.stream));
  return backend.Quantize({b.owned, ncclFloat32, g.share}, g.format, codec::Rounding{},
                          {b.sent, g.piece}, context.stream);
}

}  // namespace

Result RunQarHierarchicalAllReduce(PlanContext& context, const plan::Plan& plan,
                                   const AllReduceArgs& args, const StepSlots::Slot* feedback) {
  Backend& backend = context.backend;
  const QarGeometry g(backend, plan, args, feedback != nullptr && feedback->lease != nullptr);
  Staging staging(context);
  QarBuffers b;
  ZPP_CHECK(TakeQarBuffers(context, staging, g, args, &b));
  ZPP_CHECK(SumInsideTheNode(context, staging, g, args, b));
  if (g.fed) {  // the residuals: an int8 piece per destination node's share, then the owner's
    b.residuals = {static_cast<std::byte*>(feedback->lease->data()),
                   g.residual_piece * static_cast<size_t>(g.nodes + 1)};
    ZPP_CHECK(feedback->lease->fence().BeginWrite(context.stream));
  }
  ZPP_CHECK(SendToTheOwners(context, g, args, feedback, b));
  ZPP_CHECK(SumAtTheOwners(context, g, args, feedback, b));
  ZPP_CHECK(backend.AllGather(b.sent, b.received, g.piece, g.across, context.stream));
  ZPP_CHECK(backend.DequantizeBatch({b.received, g.piece * g.nodes}, g.share,
                                    codec::BatchMap::Strided(g.nodes, g.piece, g.share), g.format,
                                    {b.node_chunk, args.dtype, g.chunk}, context.stream));
  // Inside the node, exact: every local rank's chunk to every local rank.
  if (!g.flat) {
    ZPP_CHECK(backend.AllGather(b.node_chunk, b.io.output, g.chunk * g.element,
                                GroupKind::kIntraNode, context.stream));
  }
  ZPP_CHECK(CopyOut(context, args, b.io));
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
