#include "engine/all_reduce_plans.h"

#include <vector>

#include "codec/codec.h"
#include "common/nccl_types.h"
#include "engine/reduce_scatter_plans.h"
#include "plan/planner.h"

namespace zpp::engine {
namespace {

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

Result RunQarHierarchicalAllReduce(PlanContext& context, const plan::Plan& plan,
                                   const AllReduceArgs& args) {
  Backend& backend = context.backend;
  const int nodes = backend.GroupSize(GroupKind::kInterNode);
  const int locals = backend.GroupSize(GroupKind::kIntraNode);
  const int world = nodes * locals;
  const size_t element = NcclTypeBytes(args.dtype);
  const size_t share = plan::AllReduceShare(args.count, world);  // the elements each rank owns
  const size_t chunk = share * static_cast<size_t>(nodes);       // each local rank's, per node
  const size_t padded = chunk * static_cast<size_t>(locals);
  const codec::Format format{plan.bits_inter, plan.block, plan.rotate};
  const size_t piece = codec::PieceBytes(share, args.dtype, format);

  // Every buffer before the first collective: a refusal then passes the call through.
  Staging staging(context);
  PaddedBuffers io;
  std::byte* node_chunk = nullptr;  // this node's sum of chunk l; later chunk l all-reduced
  std::byte* sent = nullptr;        // pieces of node_chunk's shares; later the owner's piece
  std::byte* received = nullptr;    // every node's piece of my share; later every owner's piece
  std::byte* owned = nullptr;       // my share summed over all nodes, scaled, fp32
  ZPP_CHECK(staging.Take(chunk * element, &node_chunk));
  ZPP_CHECK(staging.Take(piece * nodes, &sent));
  ZPP_CHECK(staging.Take(piece * nodes, &received));
  ZPP_CHECK(staging.Take(share * sizeof(float), &owned));
  ZPP_CHECK(TakePadded(context, staging, args, padded, &io));

  // Inside the node, exact: local rank l gets the node's sum of chunk l.
  ZPP_CHECK(backend.ReduceScatter(io.input, node_chunk, chunk, args.dtype, 1.0f,
                                  GroupKind::kIntraNode, context.stream));
  // Across nodes, among local rank l's peers: share j of the chunk to node j, quantized.
  const codec::ConstTensorView chunk_in{node_chunk, args.dtype, chunk};
  ZPP_CHECK(backend.QuantizeBatch(chunk_in, share, codec::BatchMap::Strided(nodes, share, piece),
                                  format, codec::Rounding{}, {sent, piece * nodes},
                                  context.stream));
  ZPP_CHECK(backend.AllToAll(sent, received, piece, GroupKind::kInterNode, context.stream));
  const codec::ReduceBatch sum{1, static_cast<uint32_t>(nodes), 0, piece};
  ZPP_CHECK(backend.DequantizeReduceBatch({received, piece * nodes}, sum, share, format,
                                          AllReduceScale(args, world), {owned, ncclFloat32, share},
                                          context.stream));
  // The owners' sums back to every node. The owner decodes its own piece like everyone else:
  // every rank of the inter-node group ends with the same bytes of the whole chunk.
  ZPP_CHECK(backend.Quantize({owned, ncclFloat32, share}, format, codec::Rounding{}, {sent, piece},
                             context.stream));
  ZPP_CHECK(backend.AllGather(sent, received, piece, GroupKind::kInterNode, context.stream));
  ZPP_CHECK(backend.DequantizeBatch({received, piece * nodes}, share,
                                    codec::BatchMap::Strided(nodes, piece, share), format,
                                    {node_chunk, args.dtype, chunk}, context.stream));
  // Inside the node, exact: every local rank's chunk to every local rank.
  ZPP_CHECK(backend.AllGather(node_chunk, io.output, chunk * element, GroupKind::kIntraNode,
                              context.stream));
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
