// The backend interface the executor runs plans on: device memory, in-order streams, events,
// collectives on sub-groups. Two implementations: sim (CPU ranks, here) and cuda_nccl (plugin).
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "codec/batch.h"
#include "common/enum_names.h"
#include "kernels/math/codec_params.h"
#include "kernels/math/hpz_select_math.h"
#include "kernels/math/views.h"
#include "log/check.h"

namespace zpp {

// What tells one stream from another: the backend's own handle, never the address of the
// wrapper object (the cuda_nccl backend wraps the caller's cudaStream_t in a new object on every
// call, so two calls on different streams can get wrappers at the same address). `comparable`
// is false for a handle that names a different stream on each host thread (CUDA's per-thread
// default stream): such a stream is never taken for the same as another.
struct StreamIdentity {
  uintptr_t handle = 0;
  bool comparable = false;
  bool SameAs(const StreamIdentity& other) const {
    return comparable && other.comparable && handle == other.handle;
  }
};

// An in-order queue of device work (a CUDA stream; in the sim, a worker thread).
class Stream {
 public:
  virtual ~Stream() = default;
  virtual StreamIdentity identity() const = 0;
};

// A point in a stream that other streams can wait on (a CUDA event).
class Event {
 public:
  virtual ~Event() = default;
};

// Device memory owned by a backend; freed when the owner goes.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* data() const = 0;
  virtual size_t size() const = 0;
};

// The sub-groups of ranks a plan's stages run on. Every rank belongs to exactly one group of
// each kind; groups are built once per communicator from its topology.
#define ZPP_GROUP_KINDS(X)                                                              \
  X(kWorld, "world")          /* all ranks */                                           \
  X(kIntraNode, "intra-node") /* the ranks of this rank's node */                       \
  X(kInterNode, "inter-node") /* the ranks with this rank's local rank, one per node */ \
  X(kIntraRack, "intra-rack") /* this rank's local rank on every node of its rack */    \
  X(kInterRack, "inter-rack") /* its (node-in-rack, local rank) place in every rack */
enum class GroupKind { ZPP_GROUP_KINDS(ZPP_ENUMERATOR) };

// "world", "intra-node", ... for log lines.
constexpr const char* GroupKindName(GroupKind kind) {
  constexpr std::string_view kNames[] = {ZPP_GROUP_KINDS(ZPP_ENUM_NAME)};
  return NameIn(kNames, kind, "unknown").data();  // each a literal: ends in '\0'
}

// What a backend has enqueued since it was made: kernels and copies (every codec, fingerprint
// and copy operation is one), and collectives (an all-to-all built of sends and receives is
// one). A plan's cost in launches is the difference across its run.
struct LaunchCounts {
  uint64_t kernels = 0;
  uint64_t collectives = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual LaunchCounts launches() const = 0;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // This rank's index within its group of `kind`, and that group's size.
  virtual int GroupRank(GroupKind kind) const = 0;
  virtual int GroupSize(GroupKind kind) const = 0;

  virtual Result Allocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) = 0;
  // Allocate where no room is an answer, not an error (a large buffer tried before a smaller
  // one): the same result, without the warning a failed Allocate logs.
  virtual Result TryAllocate(size_t bytes, std::unique_ptr<DeviceMemory>* out) {
    return Allocate(bytes, out);
  }
  // Device memory the host may also read at any time, without synchronizing (mapped pinned
  // memory on CUDA): for counters the device bumps and the host reports when it next looks.
  // The host may initialize it through data() before any device work uses it.
  virtual Result AllocateHostVisible(size_t bytes, std::unique_ptr<DeviceMemory>* out) = 0;
  virtual Result CreateStream(std::unique_ptr<Stream>* out) = 0;
  virtual Result CreateEvent(std::unique_ptr<Event>* out) = 0;

  // Stream-ordered, never blocking the host (contract 6).
  virtual Result RecordEvent(Event& event, Stream& stream) = 0;
  // Work enqueued on `stream` after this call runs after the last RecordEvent of `event`.
  virtual Result StreamWaitEvent(Stream& stream, Event& event) = 0;
  virtual Result Memcpy(void* dst, const void* src, size_t bytes, Stream& stream) = 0;

  // recv holds group_size pieces of `bytes`, piece i from group rank i (NCCL's layout).
  virtual Result AllGather(const void* send, void* recv, size_t bytes, GroupKind group,
                           Stream& stream) = 0;
  // send and recv hold group_size pieces of `bytes`; piece j of send goes to group rank j and
  // lands as piece (my group rank) of its recv.
  virtual Result AllToAll(const void* send, void* recv, size_t bytes, GroupKind group,
                          Stream& stream) = 0;
  // Point to point within a group (peer is a group rank), matched in call order per pair, as
  // NCCL's ncclSend/ncclRecv are: the cuda_nccl backend builds all-to-all from them where the
  // loaded NCCL lacks ncclAlltoAll.
  virtual Result Send(const void* send, size_t bytes, int peer, GroupKind group,
                      Stream& stream) = 0;
  virtual Result Recv(void* recv, size_t bytes, int peer, GroupKind group, Stream& stream) = 0;
  // Plain reduce-scatter of `count` elements per rank (NCCL's layout: rank r gets chunk r),
  // summed in fp32 and multiplied by `scale` (1 for sum, 1/n for avg, the pre-multiplier).
  virtual Result ReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                               float scale, GroupKind group, Stream& stream) = 0;

  // Host to device, stream-ordered; `src` may be reused as soon as the call returns.
  virtual Result CopyFromHost(void* dst, const void* src, size_t bytes, Stream& stream) = 0;
  // Set-up only (ZPP_TUNE's calibration, tune/calibration.h), never on the collective path
  // (contract 6): runs `enqueue`, which enqueues work on `stream`, waits for that work, and gives
  // the seconds the device spent on it.
  virtual Result TimeWork(Stream& stream, const std::function<Result()>& enqueue,
                          double* seconds) = 0;
  // ZPP_TUNE=auto's timing of calls (engine/auto_tuner.h): an event that keeps when its latest
  // record was reached (a CUDA event with timing). Made at set-up; recording it never blocks.
  virtual Result CreateTimingEvent(std::unique_ptr<Event>* out) = 0;
  // The microseconds between the latest records of two timing events. Blocks the host until
  // `stop`'s has run: zpp asks once per step epoch, at its advance, of an epoch ago's calls.
  virtual Result ElapsedUs(Event& start, Event& stop, double* us) = 0;
  // Blocks the host until `event`'s latest record has run, then copies device to host. zpp
  // calls it once per step epoch, on an event recorded a whole epoch earlier (hpZ agreement).
  virtual Result ReadAfter(Event& event, void* host_dst, const void* src, size_t bytes) = 0;
  // Whether the stream work before the event's latest record has run, without waiting
  // (cudaEventQuery); true for an event never recorded.
  virtual Result EventReached(Event& event, bool* reached) = 0;

  // The 64-bit fingerprint of `bytes` (codec::Fingerprint) into *device_out.
  virtual Result Fingerprint(std::span<const std::byte> bytes, uint64_t* device_out,
                             Stream& stream) = 0;
  // hpZ's hit, before its intra-node gather (engine/hpz_cache.h): copies into `send` the
  // partition of the first of `candidates` whose fingerprint equals *now, or, when none does,
  // fills it with NaN bytes and counts a failure, so that no stale weight is ever delivered as
  // valid; adds the choice to the rank's choice sum (codec::SelectPartition). `counters` is
  // host-visible (AllocateHostVisible).
  virtual Result SelectPartition(const uint64_t* now, const codec::HpzCandidates& candidates,
                                 uint32_t hit, std::span<std::byte> send, uint32_t* counters,
                                 Stream& stream) = 0;
  // hpZ's reuse pattern of an epoch from its calls' fingerprints (codec/reuse_pattern.h), as
  // device work: pattern[i] (int32, device memory) and *hash, so that no host waits for the
  // fingerprints.
  virtual Result ReusePattern(const uint64_t* fingerprints, uint32_t calls, uint64_t seed,
                              int32_t* pattern, uint64_t* hash, Stream& stream) = 0;

  // data *= *scalar, element-wise in fp32; the scalar (of data.dtype, in device memory) is read
  // when the work runs, as NCCL reads an ncclScalarDevice pre-multiplier.
  virtual Result ScaleByDeviceScalar(codec::TensorView data, const void* scalar,
                                     Stream& stream) = 0;

  // The batched codec (codec/batch.h) as device work on `stream`: one device operation (one
  // kernel on CUDA) per call, whatever the number of items, equal to the CPU codec run item by
  // item. Views and spans are device memory. See codec/batch.h for the placements.
  virtual Result QuantizeBatch(codec::ConstTensorView input, size_t count,
                               const codec::BatchMap& map, const codec::Format& format,
                               const codec::Rounding& rounding, std::span<std::byte> pieces,
                               Stream& stream) = 0;
  virtual Result DequantizeBatch(std::span<const std::byte> pieces, size_t count,
                                 const codec::BatchMap& map, const codec::Format& format,
                                 codec::TensorView output, Stream& stream) = 0;
  virtual Result DequantizeReduceBatch(std::span<const std::byte> pieces,
                                       const codec::ReduceBatch& batch, size_t count,
                                       const codec::Format& format, float scale_after_sum,
                                       codec::TensorView output, Stream& stream) = 0;
  virtual Result DequantizeReduceRequantizeBatch(
      std::span<const std::byte> pieces, const codec::ReduceBatch& batch, size_t count,
      const codec::Format& format, const codec::Format& out_format, const codec::Rounding& rounding,
      std::span<std::byte> out_pieces, Stream& stream) = 0;
  // Error feedback (ZPP_QGZ_EF, ZPP_QAR_EF; codec/batch.h).
  virtual Result DequantizeReduceRequantizeFeedbackBatch(
      std::span<const std::byte> pieces, const codec::ReduceBatch& batch, size_t count,
      const codec::Format& format, const codec::Format& out_format, const codec::Rounding& rounding,
      std::span<std::byte> out_pieces, const codec::Format& residual_format, bool residual_valid,
      std::span<std::byte> residuals, Stream& stream) = 0;
  // qwZ's weight deltas (ZPP_QWZ_DELTA, codec/weight_delta.h). `failures` is device memory the
  // host reads later (hpZ's verification counter); `held` is device scratch of 8 bytes per item,
  // 16-byte aligned (the CUDA kernels keep each reference's fingerprint there between their two
  // launches).
  virtual Result EncodeDelta(codec::ConstTensorView weights, codec::ConstTensorView reference,
                             const codec::Format& format, std::span<std::byte> message,
                             Stream& stream) = 0;
  virtual Result ApplyDeltaBatch(std::span<const std::byte> messages, size_t stride, uint32_t items,
                                 size_t count, const codec::Format& format,
                                 codec::TensorView reference, std::span<std::byte> held,
                                 uint32_t* failures, Stream& stream) = 0;
  // Item i copies `bytes` from byte From(i) of `src` to byte To(i) of `dst`.
  virtual Result CopyBatch(std::span<const std::byte> src, std::span<std::byte> dst, size_t bytes,
                           const codec::BatchMap& map, Stream& stream) = 0;

  // One piece: a batch of one item.
  Result Quantize(codec::ConstTensorView input, const codec::Format& format,
                  const codec::Rounding& rounding, std::span<std::byte> piece, Stream& stream) {
    return QuantizeBatch(input, input.count, codec::BatchMap{}, format, rounding, piece, stream);
  }
};

}  // namespace zpp
