// The production backend: device memory, CUDA streams and events, the codec kernels, and the
// real NCCL on the communicator's sub-communicators (one per GroupKind, made once with
// ncclCommSplit at set-up). Nothing on the collective path allocates or waits for the device,
// except the pool growing on first use of a size (never while capturing: the plugin passes
// captured calls through).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "cuda_nccl/cuda_resources.h"
#include "nccl_runtime/nccl_functions.h"
#include "topology/topology.h"

namespace zpp::cuda {

class CudaNcclBackend final : public Backend {
 public:
  // `world` is the user's communicator (borrowed); `device` its CUDA device.
  CudaNcclBackend(const NcclFunctions& nccl, ncclComm_t world, int rank, int world_size,
                  int device);
  ~CudaNcclBackend() override;  // destroys the sub-communicators
  CudaNcclBackend(const CudaNcclBackend&) = delete;
  CudaNcclBackend& operator=(const CudaNcclBackend&) = delete;

  Result Init();  // the backend's own stream (set-up reads)
  // Collective over the world: the sub-communicators of a hierarchy (intra/inter node, and with
  // `rack_level` intra/inter rack), from the topology every rank computed alike.
  Result SplitSubCommunicators(const topology::Topology& topology, bool rack_level);
  // The parent is being aborted: abort the sub-communicators instead of destroying them.
  void AbortSubCommunicators();
  Result TimeWork(Stream& stream, const std::function<Result()>& enqueue, double* seconds) override;
  // The first error an owned sub-communicator reports, ncclSuccess when none (or once aborted:
  // NCCL may have freed them).
  Result SubCommunicatorError() const;

  int device() const { return device_; }
  Stream& internal_stream() { return *internal_stream_; }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  LaunchCounts launches() const override {
    return {kernels_.load(std::memory_order_relaxed), collectives_.load(std::memory_order_relaxed)};
  }
  int GroupRank(GroupKind kind) const override { return groups_[Index(kind)].rank; }
  int GroupSize(GroupKind kind) const override { return groups_[Index(kind)].size; }

  Result Allocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) override;
  Result TryAllocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) override;
  Result AllocateHostVisible(size_t bytes, std::unique_ptr<DeviceMemory>* out) override;
  Result CreateStream(std::unique_ptr<Stream>* out) override;
  Result CreateEvent(std::unique_ptr<Event>* out) override;
  Result RecordEvent(Event& event, Stream& stream) override;
  Result StreamWaitEvent(Stream& stream, Event& event) override;
  Result Memcpy(void* dst, const void* src, size_t bytes, Stream& stream) override;
  Result AllGather(const void* send, void* recv, size_t bytes, GroupKind group,
                   Stream& stream) override;
  Result AllToAll(const void* send, void* recv, size_t bytes, GroupKind group,
                  Stream& stream) override;
  Result Send(const void* send, size_t bytes, int peer, GroupKind group, Stream& stream) override;
  Result Recv(void* recv, size_t bytes, int peer, GroupKind group, Stream& stream) override;
  Result ReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                       float scale, GroupKind group, Stream& stream) override;
  Result CopyFromHost(void* dst, const void* src, size_t bytes, Stream& stream) override;
  Result ReadAfter(Event& event, void* host_dst, const void* src, size_t bytes) override;
  Result EventReached(Event& event, bool* reached) override;
  Result CreateTimingEvent(std::unique_ptr<Event>* out) override;
  Result ElapsedUs(Event& start, Event& stop, double* us) override;
  Result Fingerprint(std::span<const std::byte> bytes, uint64_t* device_out,
                     Stream& stream) override;
  Result SelectPartition(const uint64_t* now, const codec::HpzCandidates& candidates, uint32_t hit,
                         std::span<std::byte> send, uint32_t* counters, Stream& stream) override;
  Result ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed, int32_t* pattern,
                      uint64_t* hash, Stream& stream) override;
  Result ScaleByDeviceScalar(codec::TensorView data, const void* scalar, Stream& stream) override;
  Result QuantizeBatch(codec::ConstTensorView input, size_t count, const codec::BatchMap& map,
                       const codec::Format& format, const codec::Rounding& rounding,
                       std::span<std::byte> pieces, Stream& stream) override;
  Result DequantizeBatch(std::span<const std::byte> pieces, size_t count,
                         const codec::BatchMap& map, const codec::Format& format,
                         codec::TensorView output, Stream& stream) override;
  Result DequantizeReduceBatch(std::span<const std::byte> pieces, const codec::ReduceBatch& batch,
                               size_t count, const codec::Format& format, float scale_after_sum,
                               codec::TensorView output, Stream& stream) override;
  Result DequantizeReduceRequantizeBatch(std::span<const std::byte> pieces,
                                         const codec::ReduceBatch& batch, size_t count,
                                         const codec::Format& format,
                                         const codec::Format& out_format,
                                         const codec::Rounding& rounding,
                                         std::span<std::byte> out_pieces, Stream& stream) override;
  Result EncodeDelta(codec::ConstTensorView weights, codec::ConstTensorView reference,
                     const codec::Format& format, std::span<std::byte> message,
                     Stream& stream) override;
  Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                         size_t count, const codec::Format& format, codec::TensorView reference,
                         std::span<std::byte> held, uint32_t* failures, Stream& stream) override;
  Result DequantizeReduceRequantizeFeedbackBatch(
      std::span<const std::byte> pieces, const codec::ReduceBatch& batch, size_t count,
      const codec::Format& format, const codec::Format& out_format, const codec::Rounding& rounding,
      std::span<std::byte> out_pieces, const codec::Format& residual_format, bool residual_valid,
      std::span<std::byte> residuals, Stream& stream) override;
  Result CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst, size_t bytes,
                   const codec::BatchMap& map, Stream& stream) override;

 private:
  struct Group {
    ncclComm_t comm = nullptr;
    int rank = 0;
    int size = 1;
    bool owned = false;  // a sub-communicator zpp made
  };
  static constexpr int kGroupKinds = 5;
  static int Index(GroupKind kind) { return static_cast<int>(kind); }
  Result CommOf(GroupKind kind, ncclComm_t* comm) const;

  const NcclFunctions& nccl_;
  const int rank_;
  const int world_size_;
  const int device_;
  std::array<Group, kGroupKinds> groups_;
  // Set by an abort on another thread (the watchdog's) while a call may be running here: later
  // stages fail instead of using an aborted sub-communicator, and nothing is destroyed twice.
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mutex_;  // abort against a poll of the sub-communicators
  std::unique_ptr<Stream> internal_stream_;
  // Counted when enqueued: one per kernel or copy, one per collective (launches()).
  std::atomic<uint64_t> kernels_{0};
  std::atomic<uint64_t> collectives_{0};
  void CountKernel() { kernels_.fetch_add(1, std::memory_order_relaxed); }
  void CountCollective() { collectives_.fetch_add(1, std::memory_order_relaxed); }
};

}  // namespace zpp::cuda
