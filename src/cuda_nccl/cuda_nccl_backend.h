// The production backend: device memory, CUDA streams and events, the codec kernels, and the
// real NCCL on the communicator's sub-communicators (one per GroupKind, made once with
// ncclCommSplit at set-up). Nothing on the collective path allocates or waits for the device,
// except the pool growing on first use of a size (never while capturing: the plugin passes
// captured calls through).
#pragma once

#include <array>
#include <memory>

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

  int device() const { return device_; }
  Stream& internal_stream() { return *internal_stream_; }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  int GroupRank(GroupKind kind) const override { return groups_[Index(kind)].rank; }
  int GroupSize(GroupKind kind) const override { return groups_[Index(kind)].size; }

  Result Allocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) override;
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
  Result Fingerprint(std::span<const std::byte> bytes, uint64_t* device_out,
                     Stream& stream) override;
  Result VerifyFingerprint(const uint64_t* now, const uint64_t* at_fill, codec::TensorView output,
                           bool poison, uint32_t* failures, Stream& stream) override;
  Result ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed, int32_t* pattern,
                      uint64_t* hash, Stream& stream) override;
  Result ScaleByDeviceScalar(codec::TensorView data, const void* scalar, Stream& stream) override;
  Result Quantize(codec::ConstTensorView input, const codec::Format& format,
                  const codec::Rounding& rounding, std::span<std::byte> piece,
                  Stream& stream) override;
  Result Dequantize(std::vector<codec::PlacedPiece> pieces, size_t count,
                    const codec::Format& format, codec::TensorView output, Stream& stream) override;
  Result DequantizeReduce(std::vector<std::span<const std::byte>> pieces, size_t count,
                          const codec::Format& format, float scale_after_sum,
                          codec::TensorView output, Stream& stream) override;
  Result DequantizeReduceRequantize(std::vector<std::span<const std::byte>> pieces, size_t count,
                                    const codec::Format& format, const codec::Format& out_format,
                                    const codec::Rounding& rounding, std::span<std::byte> out_piece,
                                    Stream& stream) override;

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
  std::unique_ptr<Stream> internal_stream_;
};

}  // namespace zpp::cuda
