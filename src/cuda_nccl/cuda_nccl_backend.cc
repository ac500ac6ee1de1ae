#include "cuda_nccl/cuda_nccl_backend.h"

#include <cstring>

#include "codec_gpu/codec_gpu.h"
#include "codec_gpu/device_ops.h"
#include "kernels/math/float_convert.h"

namespace zpp::cuda {
namespace {

// The colour of `rank`'s group of `kind` in the split of the world (ClusterLayout::GroupOf's
// membership rules, on the topology every rank computed alike).
int ColorOf(const topology::Topology& topology, int rank, GroupKind kind) {
  const int node = topology.node_of_rank[rank];
  const int local = topology.local_rank[rank];
  const int local_size = topology.local_size(rank);
  const int rack = topology.nodes[node].rack;
  const std::vector<int>& rack_nodes = topology.racks[rack].nodes;
  int node_in_rack = 0;
  while (node_in_rack < static_cast<int>(rack_nodes.size()) && rack_nodes[node_in_rack] != node) {
    ++node_in_rack;
  }
  switch (kind) {
    case GroupKind::kIntraNode:
      return node;
    case GroupKind::kInterNode:
      return local;
    case GroupKind::kIntraRack:
      return rack * local_size + local;
    case GroupKind::kInterRack:
      return node_in_rack * local_size + local;
    case GroupKind::kWorld:
      break;
  }
  return 0;
}

}  // namespace

CudaNcclBackend::CudaNcclBackend(const NcclFunctions& nccl, ncclComm_t world, int rank,
                                 int world_size, int device)
    : nccl_(nccl), rank_(rank), world_size_(world_size), device_(device) {
  for (Group& group : groups_) group = Group{world, rank, world_size, false};
}

CudaNcclBackend::~CudaNcclBackend() {
  if (aborted_) return;
  for (Group& group : groups_) {
    if (group.owned && group.comm != nullptr && nccl_.CommDestroy != nullptr) {
      nccl_.CommDestroy(group.comm);
    }
  }
}

Result CudaNcclBackend::Init() { return CudaStream::Create(&internal_stream_); }

Result CudaNcclBackend::SplitSubCommunicators(const topology::Topology& topology, bool rack_level) {
  ZPP_CHECK_ARG(
      nccl_.CommSplit != nullptr,
      "zpp set-up: the loaded NCCL has no ncclCommSplit for the node-level sub-communicators of "
      "ZPP_HPZ, ZPP_QGZ and ZPP_QAR; every rank passes this communicator's calls to NCCL (use an "
      "NCCL that has it, or set ZPP_NCCL_LIBRARY to one)");
  std::vector<GroupKind> kinds = {GroupKind::kIntraNode, GroupKind::kInterNode};
  if (rack_level) {
    kinds.push_back(GroupKind::kIntraRack);
    kinds.push_back(GroupKind::kInterRack);
  }
  // Every split is a collective on the parent: each rank makes all of them, whatever failed
  // before, so that no rank waits in a split that another skipped; set-up then agrees on the
  // outcome (topology/setup_outcome.h).
  Result first_failure = ncclSuccess;
  for (GroupKind kind : kinds) {
    Group& group = groups_[Index(kind)];
    ncclComm_t comm = nullptr;
    // Key = world rank: group ranks in world order, as the plans number them.
    Result result = nccl_.CommSplit(groups_[Index(GroupKind::kWorld)].comm,
                                    ColorOf(topology, rank_, kind), rank_, &comm, nullptr);
    if (result == ncclSuccess && comm != nullptr) {
      group.comm = comm;
      group.owned = true;
      if (nccl_.CommUserRank(comm, &group.rank) != ncclSuccess ||
          nccl_.CommCount(comm, &group.size) != ncclSuccess) {
        result = ncclInternalError;
      }
    } else if (result == ncclSuccess) {
      result = ncclInternalError;
    }
    if (result != ncclSuccess && first_failure == ncclSuccess) {
      ZPP_WARN(
          "zpp set-up: ncclCommSplit for the %s group failed (%s); every rank passes this "
          "communicator's calls to NCCL (NCCL_DEBUG=WARN shows NCCL's reason)",
          GroupKindName(kind), ResultName(result));
      first_failure = result;
    }
  }
  return first_failure;
}

void CudaNcclBackend::AbortSubCommunicators() {
  std::lock_guard<std::mutex> lock(abort_mutex_);  // no poll of a sub-communicator NCCL frees
  if (aborted_.exchange(true)) return;
  for (const Group& group : groups_) {
    if (group.owned && group.comm != nullptr && nccl_.CommAbort != nullptr) {
      nccl_.CommAbort(group.comm);
    }
  }
}

Result CudaNcclBackend::TimeWork(Stream& stream, const std::function<Result()>& enqueue,
                                 double* seconds) {
  // Timing events of its own (the pool's disable timing); freed on every path.
  struct TimingEvents {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~TimingEvents() {
      if (start != nullptr) cudaEventDestroy(start);
      if (stop != nullptr) cudaEventDestroy(stop);
    }
  } events;
  ZPP_CUDA_CHECK(cudaEventCreate(&events.start));
  ZPP_CUDA_CHECK(cudaEventCreate(&events.stop));
  ZPP_CUDA_CHECK(cudaEventRecord(events.start, HandleOf(stream)));
  ZPP_CHECK(enqueue());
  ZPP_CUDA_CHECK(cudaEventRecord(events.stop, HandleOf(stream)));
  ZPP_CUDA_CHECK(cudaEventSynchronize(events.stop));  // set-up only
  float ms = 0;
  ZPP_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
  *seconds = ms / 1000.0;
  return ncclSuccess;
}

Result CudaNcclBackend::SubCommunicatorError() const {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (aborted_ || nccl_.CommGetAsyncError == nullptr) return ncclSuccess;
  for (const Group& group : groups_) {
    if (!group.owned || group.comm == nullptr) continue;
    ncclResult_t error = ncclSuccess;
    const ncclResult_t polled = nccl_.CommGetAsyncError(group.comm, &error);
    if (polled != ncclSuccess) return polled;
    if (error != ncclSuccess && error != ncclInProgress) return error;
  }
  return ncclSuccess;
}

Result CudaNcclBackend::CommOf(GroupKind kind, ncclComm_t* comm) const {
  if (aborted_) {
    ZPP_WARN(
        "cuda_nccl: the communicator was aborted while a zpp call was running on it; the call "
        "fails with ncclRemoteError");
    return ncclRemoteError;
  }
  const Group& group = groups_[Index(kind)];
  ZPP_CHECK_ARG(kind == GroupKind::kWorld || group.owned,
                "cuda_nccl: group %d has no sub-communicator (a plan needs a hierarchy that set-up "
                "did not make)" ZPP_BUG_REPORT,
                static_cast<int>(kind));
  *comm = group.comm;
  return ncclSuccess;
}

Result CudaNcclBackend::Allocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
  return DeviceBuffer::Create(bytes, out);
}

Result CudaNcclBackend::TryAllocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
  return DeviceBuffer::Create(bytes, out, /*quiet=*/true);
}

Result CudaNcclBackend::AllocateHostVisible(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
  ZPP_CHECK(MappedHostBuffer::Create(bytes, out));
  std::memset((*out)->data(), 0, bytes);
  return ncclSuccess;
}

Result CudaNcclBackend::CreateStream(std::unique_ptr<Stream>* out) {
  return CudaStream::Create(out);
}

Result CudaNcclBackend::CreateEvent(std::unique_ptr<Event>* out) { return CudaEvent::Create(out); }

Result CudaNcclBackend::CreateTimingEvent(std::unique_ptr<Event>* out) {
  return CudaEvent::Create(out, true);
}

Result CudaNcclBackend::ElapsedUs(Event& start, Event& stop, double* us) {
  ZPP_CUDA_CHECK(cudaEventSynchronize(HandleOf(stop)));  // at the step epoch's advance only
  float ms = 0;
  ZPP_CUDA_CHECK(cudaEventElapsedTime(&ms, HandleOf(start), HandleOf(stop)));
  *us = ms * 1000.0;
  return ncclSuccess;
}

Result CudaNcclBackend::RecordEvent(Event& event, Stream& stream) {
  ZPP_CUDA_CHECK(cudaEventRecord(HandleOf(event), HandleOf(stream)));
  return ncclSuccess;
}

Result CudaNcclBackend::StreamWaitEvent(Stream& stream, Event& event) {
  ZPP_CUDA_CHECK(cudaStreamWaitEvent(HandleOf(stream), HandleOf(event), 0));
  return ncclSuccess;
}

Result CudaNcclBackend::Memcpy(void* dst, const void* src, size_t bytes, Stream& stream) {
  CountKernel();
  if (bytes == 0) return ncclSuccess;
  ZPP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, HandleOf(stream)));
  return ncclSuccess;
}

Result CudaNcclBackend::AllGather(const void* send, void* recv, size_t bytes, GroupKind group,
                                  Stream& stream) {
  CountCollective();
  ncclComm_t comm = nullptr;
  ZPP_CHECK(CommOf(group, &comm));
  return nccl_.AllGather(send, recv, bytes, ncclUint8, comm, HandleOf(stream));
}

Result CudaNcclBackend::AllToAll(const void* send, void* recv, size_t bytes, GroupKind group,
                                 Stream& stream) {
  CountCollective();
  ncclComm_t comm = nullptr;
  ZPP_CHECK(CommOf(group, &comm));
  if (nccl_.AlltoAll != nullptr) {
    return nccl_.AlltoAll(send, recv, bytes, ncclUint8, comm, HandleOf(stream));
  }
  // An NCCL without ncclAlltoAll: the same exchange as grouped point-to-point calls.
  ZPP_CHECK_ARG(
      nccl_.Send != nullptr && nccl_.Recv != nullptr,
      "the loaded NCCL has neither ncclAlltoAll nor ncclSend/ncclRecv; zpp's call fails with "
      "ncclInvalidArgument (use an NCCL that has them, or set ZPP_NCCL_LIBRARY to one)");
  const int size = GroupSize(group);
  ZPP_CHECK(nccl_.GroupStart());
  Result result = ncclSuccess;
  for (int peer = 0; peer < size && result == ncclSuccess; ++peer) {
    result = nccl_.Send(static_cast<const std::byte*>(send) + peer * bytes, bytes, ncclUint8, peer,
                        comm, HandleOf(stream));
    if (result == ncclSuccess) {
      result = nccl_.Recv(static_cast<std::byte*>(recv) + peer * bytes, bytes, ncclUint8, peer,
                          comm, HandleOf(stream));
    }
  }
  const Result ended = nccl_.GroupEnd();
  ZPP_CHECK(result);
  return ended;
}

Result CudaNcclBackend::Send(const void* send, size_t bytes, int peer, GroupKind group,
                             Stream& stream) {
  CountCollective();
  ncclComm_t comm = nullptr;
  ZPP_CHECK(CommOf(group, &comm));
  ZPP_CHECK_ARG(nccl_.Send != nullptr,
                "the loaded NCCL has no ncclSend; zpp's call fails with ncclInvalidArgument (use "
                "an NCCL that has it, or set ZPP_NCCL_LIBRARY to one)");
  return nccl_.Send(send, bytes, ncclUint8, peer, comm, HandleOf(stream));
}

Result CudaNcclBackend::Recv(void* recv, size_t bytes, int peer, GroupKind group, Stream& stream) {
  CountCollective();
  ncclComm_t comm = nullptr;
  ZPP_CHECK(CommOf(group, &comm));
  ZPP_CHECK_ARG(nccl_.Recv != nullptr,
                "the loaded NCCL has no ncclRecv; zpp's call fails with ncclInvalidArgument (use "
                "an NCCL that has it, or set ZPP_NCCL_LIBRARY to one)");
  return nccl_.Recv(recv, bytes, ncclUint8, peer, comm, HandleOf(stream));
}

Result CudaNcclBackend::ReduceScatter(const void* send, void* recv, size_t count,
                                      ncclDataType_t dtype, float scale, GroupKind group,
                                      Stream& stream) {
  CountCollective();
  ncclComm_t comm = nullptr;
  ZPP_CHECK(CommOf(group, &comm));
  if (scale == 1.0f) {
    return nccl_.ReduceScatter(send, recv, count, dtype, ncclSum, comm, HandleOf(stream));
  }
  // A scaled sum is NCCL's pre-multiplied sum; the op may go as soon as the call is enqueued.
  ZPP_CHECK_ARG(nccl_.RedOpCreatePreMulSum != nullptr && nccl_.RedOpDestroy != nullptr,
                "the loaded NCCL has no ncclRedOpCreatePreMulSum; zpp's call fails with "
                "ncclInvalidArgument (use an NCCL that has it, or set ZPP_NCCL_LIBRARY to one)");
  uint16_t narrow = 0;
  void* scalar = &scale;
  if (dtype == ncclFloat16 || dtype == ncclBfloat16) {
    narrow = dtype == ncclFloat16 ? codec::FloatToHalf(scale) : codec::FloatToBf16(scale);
    scalar = &narrow;
  }
  ncclRedOp_t op{};
  ZPP_CHECK(nccl_.RedOpCreatePreMulSum(&op, scalar, dtype, ncclScalarHostImmediate, comm));
  const Result result = nccl_.ReduceScatter(send, recv, count, dtype, op, comm, HandleOf(stream));
  nccl_.RedOpDestroy(op, comm);
  return result;
}

Result CudaNcclBackend::CopyFromHost(void* dst, const void* src, size_t bytes, Stream& stream) {
  CountKernel();
  if (bytes <= codec::gpu::kSmallCopyBytes) {
    return codec::gpu::CopySmallFromHost(dst, src, bytes, HandleOf(stream));
  }
  // Larger records exist only at set-up; a pageable source makes this copy wait, which is fine
  // there.
  ZPP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, HandleOf(stream)));
  return ncclSuccess;
}

Result CudaNcclBackend::ReadAfter(Event& event, void* host_dst, const void* src, size_t bytes) {
  ZPP_CUDA_CHECK(cudaEventSynchronize(HandleOf(event)));
  // On zpp's own non-blocking stream: never an implicit wait on the legacy default stream.
  ZPP_CUDA_CHECK(
      cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, HandleOf(*internal_stream_)));
  ZPP_CUDA_CHECK(cudaStreamSynchronize(HandleOf(*internal_stream_)));
  return ncclSuccess;
}

Result CudaNcclBackend::EventReached(Event& event, bool* reached) {
  const cudaError_t state = cudaEventQuery(HandleOf(event));
  *reached = state == cudaSuccess;
  if (state == cudaErrorNotReady) {
    cudaGetLastError();  // not an error: leave none behind for the next check
    return ncclSuccess;
  }
  ZPP_CUDA_CHECK(state);
  return ncclSuccess;
}

Result CudaNcclBackend::Fingerprint(std::span<const std::byte> bytes, uint64_t* device_out,
                                    Stream& stream) {
  CountKernel();  // one device operation, as the sim counts it (its memset of the sum aside)
  return codec::gpu::Fingerprint(bytes, device_out, HandleOf(stream));
}

Result CudaNcclBackend::SelectPartition(const uint64_t* now, const codec::HpzCandidates& candidates,
                                        uint32_t hit, std::span<std::byte> send, uint32_t* counters,
                                        Stream& stream) {
  CountKernel();
  return codec::gpu::SelectPartition(now, candidates, hit, send, counters, HandleOf(stream));
}

Result CudaNcclBackend::ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed,
                                     int32_t* pattern, uint64_t* hash, Stream& stream) {
  CountKernel();  // one device operation, as the sim counts it (its memset of the hash aside)
  return codec::gpu::ReusePattern(fingerprints, calls, seed, pattern, hash, HandleOf(stream));
}

Result CudaNcclBackend::ScaleByDeviceScalar(codec::TensorView data, const void* scalar,
                                            Stream& stream) {
  CountKernel();
  return codec::gpu::ScaleByDeviceScalar(data, scalar, HandleOf(stream));
}

Result CudaNcclBackend::QuantizeBatch(codec::ConstTensorView input, size_t count,
                                      const codec::BatchMap& map, const codec::Format& format,
                                      const codec::Rounding& rounding, std::span<std::byte> pieces,
                                      Stream& stream) {
  CountKernel();
  return codec::gpu::QuantizeBatch(input, count, map, format, rounding, pieces, HandleOf(stream));
}

Result CudaNcclBackend::DequantizeBatch(std::span<const std::byte> pieces, size_t count,
                                        const codec::BatchMap& map, const codec::Format& format,
                                        codec::TensorView output, Stream& stream) {
  CountKernel();
  return codec::gpu::DequantizeBatch(pieces, count, map, format, output, HandleOf(stream));
}

Result CudaNcclBackend::DequantizeReduceBatch(std::span<const std::byte> pieces,
                                              const codec::ReduceBatch& batch, size_t count,
                                              const codec::Format& format, float scale_after_sum,
                                              codec::TensorView output, Stream& stream) {
  CountKernel();
  return codec::gpu::DequantizeReduceBatch(pieces, batch, count, format, scale_after_sum, output,
                                           HandleOf(stream));
}

Result CudaNcclBackend::DequantizeReduceRequantizeBatch(
    std::span<const std::byte> pieces, const codec::ReduceBatch& batch, size_t count,
    const codec::Format& format, const codec::Format& out_format, const codec::Rounding& rounding,
    std::span<std::byte> out_pieces, Stream& stream) {
  CountKernel();
  return codec::gpu::DequantizeReduceRequantizeBatch(pieces, batch, count, format, 1.0f, out_format,
                                                     rounding, out_pieces, HandleOf(stream));
}

Result CudaNcclBackend::DequantizeReduceRequantizeFeedbackBatch(
    std::span<const std::byte> pieces, const codec::ReduceBatch& batch, size_t count,
    const codec::Format& format, const codec::Format& out_format, const codec::Rounding& rounding,
    std::span<std::byte> out_pieces, const codec::Format& residual_format, bool residual_valid,
    std::span<std::byte> residuals, Stream& stream) {
  CountKernel();
  return codec::gpu::DequantizeReduceRequantizeFeedbackBatch(
      pieces, batch, count, format, out_format, rounding, out_pieces, residual_format,
      residual_valid, residuals, HandleOf(stream));
}

Result CudaNcclBackend::EncodeDelta(codec::ConstTensorView weights,
                                    codec::ConstTensorView reference, const codec::Format& format,
                                    std::span<std::byte> message, Stream& stream) {
  CountKernel();  // one device operation, as the sim counts it (the fingerprint's launch aside)
  return codec::gpu::EncodeDelta(weights, reference, format, codec::Rounding{}, message,
                                 HandleOf(stream));
}

Result CudaNcclBackend::ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride,
                                        uint32_t items, size_t count, const codec::Format& format,
                                        codec::TensorView reference, std::span<std::byte> held,
                                        uint32_t* failures, Stream& stream) {
  CountKernel();  // one device operation, as the sim counts it (the fingerprints' launch aside)
  return codec::gpu::ApplyDeltaBatch(messages, stride, items, count, format, reference, held,
                                     failures, HandleOf(stream));
}

Result CudaNcclBackend::CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst,
                                  size_t bytes, const codec::BatchMap& map, Stream& stream) {
  CountKernel();
  return codec::gpu::CopyBatch(src, dst, bytes, map, HandleOf(stream));
}

}  // namespace zpp::cuda
