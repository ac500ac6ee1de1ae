// One rank's view of a SimWorld: the Backend the executor uses in tests and in the demo.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "backend/backend.h"
#include "sim/sim_stream.h"
#include "sim/sim_world.h"
#include "sim/stream_order_checker.h"
#include "sim/two_level.h"

namespace zpp::sim {

class SimBackend final : public Backend {
 public:
  SimBackend(SimWorld& world, int rank);

  int rank() const override { return rank_; }
  int world_size() const override { return world_.world_size(); }
  LaunchCounts launches() const override {
    return {kernels_.load(std::memory_order_relaxed), collectives_.load(std::memory_order_relaxed)};
  }
  int GroupRank(GroupKind kind) const override { return group(kind).my_index; }
  int GroupSize(GroupKind kind) const override {
    return static_cast<int>(group(kind).members.size());
  }

  Result Allocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) override;
  // The sim's device memory is host memory; host-visible memory is pinned host memory on CUDA,
  // which the limit below leaves out.
  Result AllocateHostVisible(size_t bytes, std::unique_ptr<DeviceMemory>* out) override;
  Result CreateStream(std::unique_ptr<Stream>* out) override;
  Result CreateEvent(std::unique_ptr<Event>* out) override { return NewEvent(false, out); }
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
  Result CreateTimingEvent(std::unique_ptr<Event>* out) override { return NewEvent(true, out); }
  // Counted as a host synchronization.
  Result ElapsedUs(Event& start, Event& stop, double* us) override;
  Result TimeWork(Stream& stream, const std::function<Result()>& enqueue, double* seconds) override;
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

  // Device work given as host code (the sim's kernels: the CPU codec reference runs this way).
  void Launch(Stream& stream, std::function<void()> work);
  // Blocks the host until `stream` is idle. Counted: the collective path must never call it.
  void Synchronize(Stream& stream);
  // Tests: from now on an Allocate of more than `bytes` fails as cudaMalloc does when the device
  // is full (ncclUnhandledCudaError); 0 fails every one.
  void SetAllocationLimitForTesting(size_t bytes) { allocation_limit_ = bytes; }
  // Tests: from now on AllocateHostVisible fails (ncclUnhandledCudaError), as cudaHostAlloc does
  // when pinned memory runs out.
  void SetHostAllocationFailsForTesting(bool fails) { host_allocation_fails_ = fails; }
  // From now on CreateEvent fails (CUDA: out of driver resources).
  void SetEventCreationFailsForTesting(bool fails) { event_creation_fails_ = fails; }
  // Tests: from now on a timing event keeps the time `clock_us` gives when it is recorded,
  // instead of the time the stream reaches it (injected call times, deterministic).
  void SetCallClockForTesting(std::function<double()> clock_us) {
    call_clock_ = std::move(clock_us);
  }
  // Tests: every task of `stream` from now on starts this much later (a slow writer).
  void SetStreamDelayForTesting(Stream& stream, std::chrono::microseconds delay);
  // The first failure of a collective or of device work since the start, as
  // ncclCommGetAsyncError reports it (ncclRemoteError: a peer gone or ZPP_TIMEOUT passed).
  Result AsyncError() const;

  SimWorld& world() { return world_; }

  // Tests: from now on every device access to memory allocated from here on is checked for
  // device-side order (sim/stream_order_checker.h).
  void EnableStreamOrderCheckForTesting();
  const StreamOrderChecker* stream_order() const { return order_.get(); }

 private:
  struct Group {
    std::vector<int> members;  // world ranks
    int my_index = 0;
  };
  static constexpr int kGroupKinds = 5;

  const Group& group(GroupKind kind) const { return groups_[static_cast<int>(kind)]; }
  Group& group(GroupKind kind) { return groups_[static_cast<int>(kind)]; }
  void CountRing(const Group& g, uint64_t piece_bytes);
  // Runs `work` on the stream; its failure is reported on the next call (as a kernel's is).
  Result LaunchChecked(Stream& stream, std::function<Result()> work);
  // Runs a transport call on the stream. Once one has failed, every later collective fails
  // when it is called (the communicator is broken, as after ncclCommAbort).
  Result LaunchCollective(Stream& stream, std::function<Result()> work);
  transport::GroupView ViewOf(GroupKind kind) const;
  // The world on a uniform layout of several nodes of several ranks (sim/two_level.h).
  bool TwoLevel(GroupKind kind) const { return kind == GroupKind::kWorld && two_level_.usable(); }
  TwoLevelCall TwoLevelCallNow();

  SimWorld& world_;
  const int rank_;
  std::array<Group, kGroupKinds> groups_;
  TwoLevelLayout two_level_;  // usable: world collectives cross each node boundary once
  SimWorld::Sequences& sequences_;
  std::shared_ptr<std::atomic<int>> device_error_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<int>> transport_error_ = std::make_shared<std::atomic<int>>(0);
  std::atomic<uint64_t> kernels_{0};
  std::atomic<uint64_t> collectives_{0};
  std::atomic<bool> host_allocation_fails_{false};
  std::atomic<bool> event_creation_fails_{false};
  std::function<double()> call_clock_;  // SetCallClockForTesting
  Result NewEvent(bool timing, std::unique_ptr<Event>* out);
  std::unique_ptr<StreamOrderChecker> order_;
  // Declares an operation's memory to the order checker, when on (nothing is built when off:
  // the CPU backend's collective path runs through here).
  void Uses(Stream& stream, const char* what,
            std::initializer_list<StreamOrderChecker::Access> accesses);
  std::atomic<size_t> allocation_limit_{SIZE_MAX};
};

}  // namespace zpp::sim
