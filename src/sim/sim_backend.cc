#include "sim/sim_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include "codec/batch.h"
#include "codec/codec.h"
#include "codec/element_io.h"
#include "codec/hpz_select.h"
#include "codec/reuse_pattern.h"
#include "codec/weight_delta.h"
#include "sim/scratch.h"

namespace zpp::sim {
namespace {

class SimMemory final : public DeviceMemory {
 public:
  explicit SimMemory(size_t bytes)
      : size_(bytes),
        data_(static_cast<char*>(::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{256}))) {
    // Poison: fresh device memory holds garbage, and NaN-filled floats make unwritten
    // elements visible in every comparison.
    std::memset(data_, 0xff, bytes);
  }
  ~SimMemory() override { ::operator delete (data_, std::align_val_t{256}); }
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  size_t size_;
  char* data_;
};

// Uniform layouts only: there every node's ranks form one position in each inter-node group.
// Elsewhere the world's collectives stay flat (the hierarchical plans are off there too).
TwoLevelLayout TwoLevelLayoutOf(const ClusterLayout& layout) {
  TwoLevelLayout two_level;
  const int nodes = layout.node_count();
  if (nodes < 2 || layout.world_size() % nodes != 0) return two_level;
  const int per_node = layout.world_size() / nodes;
  std::vector<int> rank_at(static_cast<size_t>(layout.world_size()), -1);
  std::vector<int> filled(static_cast<size_t>(nodes), 0);
  for (int rank = 0; rank < layout.world_size(); ++rank) {
    const int node = layout.node_of_rank[rank];
    if (filled[node] == per_node) return two_level;
    rank_at[static_cast<size_t>(node * per_node + filled[node]++)] = rank;
  }
  two_level.nodes = nodes;
  two_level.ranks_per_node = per_node;
  two_level.rank_at = std::move(rank_at);
  return two_level;
}

SimStream& AsSim(Stream& stream) { return static_cast<SimStream&>(stream); }
SimEvent& AsSim(Event& event) { return static_cast<SimEvent&>(event); }

}  // namespace

SimBackend::SimBackend(SimWorld& world, int rank)
    : world_(world), rank_(rank), sequences_(world.SequencesOf(rank)) {
  for (int kind = 0; kind < kGroupKinds; ++kind) {
    Group& g = groups_[kind];
    g.members = world.layout().GroupOf(rank, static_cast<GroupKind>(kind));
    for (size_t i = 0; i < g.members.size(); ++i) {
      if (g.members[i] == rank) g.my_index = static_cast<int>(i);
    }
  }
  two_level_ = TwoLevelLayoutOf(world.layout());
}

Result SimBackend::Allocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
  if (bytes > allocation_limit_.load()) return ncclUnhandledCudaError;
  *out = std::make_unique<SimMemory>(bytes);
  if (order_) order_->Allocated((*out)->data(), bytes);
  return ncclSuccess;
}

void SimBackend::EnableStreamOrderCheckForTesting() {
  if (!order_) order_ = std::make_unique<StreamOrderChecker>();
}

void SimBackend::Uses(Stream& stream, const char* what,
                      std::initializer_list<StreamOrderChecker::Access> accesses) {
  if (order_) {
    order_->Enqueue(AsSim(stream).identity().handle, what, {accesses.begin(), accesses.size()});
  }
}

Result SimBackend::AllocateHostVisible(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
  if (host_allocation_fails_) return ncclUnhandledCudaError;
  *out = std::make_unique<SimMemory>(bytes);
  return ncclSuccess;
}

Result SimBackend::CreateStream(std::unique_ptr<Stream>* out) {
  *out = std::make_unique<SimStream>();
  return ncclSuccess;
}

Result SimBackend::NewEvent(bool timing, std::unique_ptr<Event>* out) {
  if (event_creation_fails_) return ncclUnhandledCudaError;
  *out = std::make_unique<SimEvent>(timing);
  return ncclSuccess;
}

Result SimBackend::RecordEvent(Event& event, Stream& stream) {
  if (order_) order_->Record(reinterpret_cast<uintptr_t>(&event), AsSim(stream).identity().handle);
  SimEvent& sim = AsSim(event);
  sim.Record(AsSim(stream),
             sim.timing() && call_clock_ ? std::optional(call_clock_()) : std::nullopt);
  return ncclSuccess;
}

Result SimBackend::StreamWaitEvent(Stream& stream, Event& event) {
  if (order_) order_->Wait(AsSim(stream).identity().handle, reinterpret_cast<uintptr_t>(&event));
  AsSim(event).MakeStreamWait(AsSim(stream));
  return ncclSuccess;
}

void SimBackend::SetStreamDelayForTesting(Stream& stream, std::chrono::microseconds delay) {
  AsSim(stream).SetTaskDelay(delay);
}

Result SimBackend::Memcpy(void* dst, const void* src, size_t bytes, Stream& stream) {
  Uses(stream, "Memcpy", {{src, bytes, false}, {dst, bytes, true}});
  kernels_.fetch_add(1, std::memory_order_relaxed);
  AsSim(stream).Enqueue([dst, src, bytes] { std::memmove(dst, src, bytes); });
  return ncclSuccess;
}

void SimBackend::Launch(Stream& stream, std::function<void()> work) {
  AsSim(stream).Enqueue([work = std::move(work)] { work(); });
}

Result SimBackend::TimeWork(Stream& stream, const std::function<Result()>& enqueue,
                            double* seconds) {
  AsSim(stream).Synchronize();  // not counted: set-up only, never the collective path
  const auto start = std::chrono::steady_clock::now();
  const Result enqueued = enqueue();
  AsSim(stream).Synchronize();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ZPP_CHECK(enqueued);
  return AsyncError();
}

void SimBackend::Synchronize(Stream& stream) {
  world_.CountHostSync();
  AsSim(stream).Synchronize();
}

// Counted as NCCL's rings move a collective: this rank's piece enters every other node of the
// group once, then spreads to the other members of each node.
void SimBackend::CountRing(const Group& g, uint64_t piece_bytes) {
  std::set<int> other_nodes;
  const ClusterLayout& layout = world_.layout();
  for (int member : g.members) {
    const int node = layout.node_of_rank[member];
    if (node != layout.node_of_rank[rank_] && other_nodes.insert(node).second) {
      world_.CountSent(rank_, layout.LinkBetween(rank_, member), piece_bytes);
    }
  }
  world_.CountSent(rank_, zppLinkIntraNode,
                   (g.members.size() - 1 - other_nodes.size()) * piece_bytes);
}

TwoLevelCall SimBackend::TwoLevelCallNow() {
  // Both levels' sequences are taken when the call is enqueued, as every collective's is.
  TwoLevelCall call{
      &two_level_, rank_, ViewOf(GroupKind::kInterNode), 0, ViewOf(GroupKind::kIntraNode), 0};
  call.inter_sequence = sequences_.collectives[static_cast<int>(GroupKind::kInterNode)]++;
  call.intra_sequence = sequences_.collectives[static_cast<int>(GroupKind::kIntraNode)]++;
  return call;
}

transport::GroupView SimBackend::ViewOf(GroupKind kind) const {
  const Group& g = group(kind);
  return {kind, g.members, g.my_index};
}

Result SimBackend::LaunchCollective(Stream& stream, std::function<Result()> work) {
  collectives_.fetch_add(1, std::memory_order_relaxed);
  const int earlier = transport_error_->load();
  if (earlier != ncclSuccess) return static_cast<Result>(earlier);
  AsSim(stream).Enqueue([error = transport_error_, work = std::move(work)] {
    if (error->load() != ncclSuccess) return;  // broken: later work is skipped, never waits
    const Result result = work();
    if (result != ncclSuccess) error->store(result);
  });
  return ncclSuccess;
}

Result SimBackend::AsyncError() const {
  const int transport = transport_error_->load();
  return static_cast<Result>(transport != ncclSuccess ? transport : device_error_->load());
}

Result SimBackend::AllGather(const void* send, void* recv, size_t bytes, GroupKind kind,
                             Stream& stream) {
  Uses(stream, "AllGather", {{send, bytes, false}, {recv, bytes * GroupSize(kind), true}});
  const uint64_t sequence = sequences_.collectives[static_cast<int>(kind)]++;
  CountRing(group(kind), bytes);
  transport::Transport& transport = world_.transport();
  if (TwoLevel(kind)) {
    return LaunchCollective(stream, [&transport, levels = TwoLevelCallNow(), send, recv, bytes] {
      return TwoLevelAllGather(transport, levels, send, recv, bytes);
    });
  }
  return LaunchCollective(
      stream, [&transport, view = ViewOf(kind), rank = rank_, sequence, send, recv, bytes] {
        return transport.AllGather(rank, view, sequence, send, recv, bytes);
      });
}

Result SimBackend::AllToAll(const void* send, void* recv, size_t bytes, GroupKind kind,
                            Stream& stream) {
  const size_t all = bytes * GroupSize(kind);
  Uses(stream, "AllToAll", {{send, all, false}, {recv, all, true}});
  const Group& g = group(kind);
  const uint64_t sequence = sequences_.collectives[static_cast<int>(kind)]++;
  for (int member : g.members) {
    if (member != rank_) world_.CountSent(rank_, world_.layout().LinkBetween(rank_, member), bytes);
  }
  transport::Transport& transport = world_.transport();
  return LaunchCollective(
      stream, [&transport, view = ViewOf(kind), rank = rank_, sequence, send, recv, bytes] {
        return transport.AllToAll(rank, view, sequence, send, recv, bytes);
      });
}

}  // namespace zpp::sim

namespace zpp::sim {

Result SimBackend::LaunchChecked(Stream& stream, std::function<Result()> work) {
  kernels_.fetch_add(1, std::memory_order_relaxed);
  // A failure inside earlier device work is sticky, as a CUDA error is.
  const int earlier = device_error_->load();
  if (earlier != ncclSuccess) return static_cast<Result>(earlier);
  AsSim(stream).Enqueue([error = device_error_, work = std::move(work)] {
    const Result result = work();
    if (result != ncclSuccess) error->store(result);
  });
  return ncclSuccess;
}

Result SimBackend::ReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                                 float scale, GroupKind kind, Stream& stream) {
  const size_t out_bytes = count * NcclTypeBytes(dtype);
  Uses(stream, "ReduceScatter",
       {{send, out_bytes * GroupSize(kind), false}, {recv, out_bytes, true}});
  if (dtype != ncclFloat32 && dtype != ncclFloat16 && dtype != ncclBfloat16) {
    ZPP_WARN("sim reduce-scatter: dtype %d is not fp32, fp16 or bf16" ZPP_BUG_REPORT,
             static_cast<int>(dtype));
    return ncclInvalidArgument;
  }
  const Group& g = group(kind);
  const uint64_t sequence = sequences_.collectives[static_cast<int>(kind)]++;
  const size_t chunk_bytes = count * NcclTypeBytes(dtype);
  CountRing(g, chunk_bytes);  // a ring reduce-scatter moves what an all-gather of a chunk does
  transport::Transport& transport = world_.transport();
  if (TwoLevel(kind)) {
    return LaunchCollective(
        stream, [&transport, levels = TwoLevelCallNow(), send, recv, count, dtype, scale] {
          return TwoLevelReduceScatter(transport, levels, send, recv, count, dtype, scale);
        });
  }
  // Each member's chunk `me` comes here (an all-to-all), then sums in rank order: the same
  // float operations in the same order on every transport, so the result is deterministic.
  return LaunchCollective(stream, [&transport, view = ViewOf(kind), rank = rank_, sequence, send,
                                   recv, count, dtype, scale, chunk_bytes] {
    const size_t size = view.members.size();
    Scratch& scratch = Scratch::OfThisThread();
    std::byte* chunks = scratch.Take(0, size * chunk_bytes);
    ZPP_CHECK(transport.AllToAll(rank, view, sequence, send, chunks, chunk_bytes));
    std::vector<const std::byte*> terms(size);
    for (size_t peer = 0; peer < size; ++peer) terms[peer] = chunks + peer * chunk_bytes;
    // Every member has read this rank's input (in-place is allowed).
    codec::SumElements(terms.data(), size, dtype, count, scale, recv);
    return ncclSuccess;
  });
}

Result SimBackend::QuantizeBatch(codec::ConstTensorView input, size_t count,
                                 const codec::BatchMap& map, const codec::Format& format,
                                 const codec::Rounding& rounding, std::span<std::byte> pieces,
                                 Stream& stream) {
  Uses(stream, "QuantizeBatch",
       {{input.data, input.count * NcclTypeBytes(input.dtype), false},
        {pieces.data(), pieces.size(), true}});
  return LaunchChecked(
      stream, [=] { return codec::QuantizeBatch(input, count, map, format, rounding, pieces); });
}

Result SimBackend::DequantizeBatch(std::span<const std::byte> pieces, size_t count,
                                   const codec::BatchMap& map, const codec::Format& format,
                                   codec::TensorView output, Stream& stream) {
  Uses(stream, "DequantizeBatch",
       {{pieces.data(), pieces.size(), false},
        {output.data, output.count * NcclTypeBytes(output.dtype), true}});
  return LaunchChecked(stream,
                       [=] { return codec::DequantizeBatch(pieces, count, map, format, output); });
}

Result SimBackend::DequantizeReduceBatch(std::span<const std::byte> pieces,
                                         const codec::ReduceBatch& batch, size_t count,
                                         const codec::Format& format, float scale_after_sum,
                                         codec::TensorView output, Stream& stream) {
  Uses(stream, "DequantizeReduceBatch",
       {{pieces.data(), pieces.size(), false},
        {output.data, output.count * NcclTypeBytes(output.dtype), true}});
  return LaunchChecked(stream, [=] {
    return codec::DequantizeReduceBatch(pieces, batch, count, format, scale_after_sum, output);
  });
}

Result SimBackend::DequantizeReduceRequantizeBatch(
    std::span<const std::byte> pieces, const codec::ReduceBatch& batch, size_t count,
    const codec::Format& format, const codec::Format& out_format, const codec::Rounding& rounding,
    std::span<std::byte> out_pieces, Stream& stream) {
  Uses(stream, "DequantizeReduceRequantizeBatch",
       {{pieces.data(), pieces.size(), false}, {out_pieces.data(), out_pieces.size(), true}});
  return LaunchChecked(stream, [=] {
    return codec::DequantizeReduceRequantizeBatch(pieces, batch, count, format, 1.0f, out_format,
                                                  rounding, out_pieces);
  });
}

Result SimBackend::DequantizeReduceRequantizeFeedbackBatch(
    std::span<const std::byte> pieces, const codec::ReduceBatch& batch, size_t count,
    const codec::Format& format, const codec::Format& out_format, const codec::Rounding& rounding,
    std::span<std::byte> out_pieces, const codec::Format& residual_format, bool residual_valid,
    std::span<std::byte> residuals, Stream& stream) {
  Uses(stream, "DequantizeReduceRequantizeFeedbackBatch",
       {{pieces.data(), pieces.size(), false},
        {out_pieces.data(), out_pieces.size(), true},
        {residuals.data(), residuals.size(), true}});
  return LaunchChecked(stream, [=] {
    return codec::DequantizeReduceRequantizeFeedbackBatch(pieces, batch, count, format, out_format,
                                                          rounding, out_pieces, residual_format,
                                                          residual_valid, residuals);
  });
}

Result SimBackend::EncodeDelta(codec::ConstTensorView weights, codec::ConstTensorView reference,
                               const codec::Format& format, std::span<std::byte> message,
                               Stream& stream) {
  const size_t element = NcclTypeBytes(weights.dtype);
  Uses(stream, "EncodeDelta",
       {{weights.data, weights.count * element, false},
        {reference.data, reference.count * element, false},
        {message.data(), message.size(), true}});
  return LaunchChecked(stream, [=] {
    return codec::EncodeDelta(weights, reference, format, codec::Rounding{}, message);
  });
}

Result SimBackend::ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride,
                                   uint32_t items, size_t count, const codec::Format& format,
                                   codec::TensorView reference, std::span<std::byte> held,
                                   uint32_t* failures, Stream& stream) {
  // `held` is the CUDA kernels' scratch: the CPU codec fingerprints as it goes.
  Uses(stream, "ApplyDeltaBatch",
       {{messages.data(), messages.size(), false},
        {held.data(), held.size(), true},
        {reference.data, reference.count * NcclTypeBytes(reference.dtype), true},
        {failures, sizeof(uint32_t), true}});
  return LaunchChecked(stream, [=] {
    return codec::ApplyDeltaBatch(messages, stride, items, count, format, reference, failures);
  });
}

Result SimBackend::CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst, size_t bytes,
                             const codec::BatchMap& map, Stream& stream) {
  Uses(stream, "CopyBatch", {{src.data(), src.size(), false}, {dst.data(), dst.size(), true}});
  return LaunchChecked(stream, [=] { return codec::CopyBatch(src, dst, bytes, map); });
}

}  // namespace zpp::sim

namespace zpp::sim {

Result SimBackend::CopyFromHost(void* dst, const void* src, size_t bytes, Stream& stream) {
  Uses(stream, "CopyFromHost", {{dst, bytes, true}});
  kernels_.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::byte> copy(static_cast<const std::byte*>(src),
                              static_cast<const std::byte*>(src) + bytes);
  AsSim(stream).Enqueue(
      [dst, copy = std::move(copy)] { std::memcpy(dst, copy.data(), copy.size()); });
  return ncclSuccess;
}

Result SimBackend::ReadAfter(Event& event, void* host_dst, const void* src, size_t bytes) {
  world_.CountHostSync();
  AsSim(event).Synchronize();
  std::memcpy(host_dst, src, bytes);
  return ncclSuccess;
}

Result SimBackend::ElapsedUs(Event& start, Event& stop, double* us) {
  world_.CountHostSync();
  AsSim(stop).Synchronize();
  AsSim(start).Synchronize();
  *us = AsSim(stop).TimeUs() - AsSim(start).TimeUs();
  return ncclSuccess;
}

Result SimBackend::EventReached(Event& event, bool* reached) {
  *reached = AsSim(event).Reached();
  return ncclSuccess;
}

Result SimBackend::Fingerprint(std::span<const std::byte> bytes, uint64_t* device_out,
                               Stream& stream) {
  Uses(stream, "Fingerprint",
       {{bytes.data(), bytes.size(), false}, {device_out, sizeof(uint64_t), true}});
  return LaunchChecked(stream,
                       [bytes, device_out] { return codec::Fingerprint(bytes, device_out); });
}

Result SimBackend::SelectPartition(const uint64_t* now, const codec::HpzCandidates& candidates,
                                   uint32_t hit, std::span<std::byte> send, uint32_t* counters,
                                   Stream& stream) {
  if (order_) {  // a list as long as the candidates: built only when checking
    std::vector<StreamOrderChecker::Access> uses = {{now, sizeof(uint64_t), false}};
    for (uint32_t i = 0; i < candidates.count; ++i) {
      uses.push_back({candidates.fingerprint[i], sizeof(uint64_t), false});
      uses.push_back({candidates.partition[i], send.size(), false});
    }
    uses.push_back({send.data(), send.size(), true});
    order_->Enqueue(AsSim(stream).identity().handle, "SelectPartition", uses);
  }
  return LaunchChecked(
      stream, [=] { return codec::SelectPartition(now, candidates, hit, send, counters); });
}

Result SimBackend::ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed,
                                int32_t* pattern, uint64_t* hash, Stream& stream) {
  Uses(stream, "ReusePattern",
       {{fingerprints, calls * sizeof(uint64_t), false},
        {pattern, calls * sizeof(int32_t), true},
        {hash, sizeof(uint64_t), true}});
  return LaunchChecked(stream, [=] {
    return codec::ReusePattern({fingerprints, calls}, seed, {pattern, calls}, hash);
  });
}

}  // namespace zpp::sim

namespace zpp::sim {

Result SimBackend::ScaleByDeviceScalar(codec::TensorView data, const void* scalar, Stream& stream) {
  Uses(stream, "ScaleByDeviceScalar",
       {{scalar, NcclTypeBytes(data.dtype), false},
        {data.data, data.count * NcclTypeBytes(data.dtype), true}});
  return LaunchChecked(stream, [data, scalar] {
    float factor = 0;
    codec::LoadElements(scalar, data.dtype, 0, 1, &factor);
    std::vector<float> values(data.count);
    codec::LoadElements(data.data, data.dtype, 0, data.count, values.data());
    for (float& value : values) value *= factor;
    codec::StoreElements(data.data, data.dtype, 0, data.count, values.data());
    return ncclSuccess;
  });
}

}  // namespace zpp::sim

namespace zpp::sim {

Result SimBackend::Send(const void* send, size_t bytes, int peer, GroupKind kind, Stream& stream) {
  Uses(stream, "Send", {{send, bytes, false}});
  const Group& g = group(kind);
  if (peer < 0 || peer >= static_cast<int>(g.members.size())) return ncclInvalidArgument;
  const int to = g.members[peer];
  const uint64_t sequence = sequences_.sends_to[static_cast<int>(kind)][to]++;
  world_.CountSent(rank_, world_.layout().LinkBetween(rank_, to), bytes);
  transport::Transport& transport = world_.transport();
  return LaunchCollective(stream, [&transport, rank = rank_, kind, to, sequence, send, bytes] {
    return transport.Send(rank, kind, to, sequence, send, bytes);
  });
}

Result SimBackend::Recv(void* recv, size_t bytes, int peer, GroupKind kind, Stream& stream) {
  Uses(stream, "Recv", {{recv, bytes, true}});
  const Group& g = group(kind);
  if (peer < 0 || peer >= static_cast<int>(g.members.size())) return ncclInvalidArgument;
  const int from = g.members[peer];
  const uint64_t sequence = sequences_.recvs_from[static_cast<int>(kind)][from]++;
  transport::Transport& transport = world_.transport();
  return LaunchCollective(stream, [&transport, rank = rank_, kind, from, sequence, recv, bytes] {
    return transport.Recv(rank, kind, from, sequence, recv, bytes);
  });
}

}  // namespace zpp::sim
