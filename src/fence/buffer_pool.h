// Reusable device buffers for plans (staging for quantized pieces, receive areas), each with
// its own EpochFence. Handing a buffer out never blocks the host: the fence orders the device
// work of its successive users instead.
//
// A bounded pool never allocates: it carves its buffers from one reservation made at
// communicator set-up, where the ranks agree on the outcome (engine/pool_reservation.h). Whether
// it can give a buffer then depends only on the sizes asked for so far and the agreed
// capacity, both the same on every rank (every rank makes the same calls in the same order and
// plans them alike), so a refusal happens on every rank at the same call: the plans take all
// their buffers before they enqueue a collective, and the engine passes that call through to
// NCCL on every rank alike. An on-demand pool allocates as Take first needs a buffer; its
// failure is one rank's alone (only for the CPU backend, the tests, and copies whose failure
// changes no decision).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "fence/epoch_fence.h"
#include "fence/fence_events.h"

namespace zpp {

struct PooledBuffer {
  std::unique_ptr<DeviceMemory> memory;
  std::unique_ptr<EpochFence> fence;
  bool leased = false;
};

class BufferPool;

// A buffer taken from the pool; goes back when the lease ends. Its user brackets each device
// use with the fence's Begin*/End* on the stream that does the work.
class BufferLease {
 public:
  BufferLease() = default;
  BufferLease(BufferPool* pool, PooledBuffer* buffer) : pool_(pool), buffer_(buffer) {}
  BufferLease(BufferLease&& other) noexcept;
  BufferLease& operator=(BufferLease&& other) noexcept;
  ~BufferLease();

  void* data() const { return buffer_->memory->data(); }
  size_t size() const { return buffer_->memory->size(); }
  EpochFence& fence() const { return *buffer_->fence; }
  explicit operator bool() const { return buffer_ != nullptr; }

 private:
  void Return();
  BufferPool* pool_ = nullptr;
  PooledBuffer* buffer_ = nullptr;
};

class BufferPool {
 public:
  // On demand: buffers are allocated as Take first needs them.
  BufferPool(Backend& backend, bool fence_enabled);
  // Bounded: buffers are carved from `reservation` (null: none, every Take is refused).
  BufferPool(Backend& backend, bool fence_enabled, std::unique_ptr<DeviceMemory> reservation);

  // At communicator set-up, where the ranks agree on the outcome: the events of the fences of
  // up to `events` buffer uses, so that no fence creates one on the collective path
  // (fence_events.h). Without it, fences make their events as they first need them.
  Result Prepare(size_t events);

  // A buffer of at least `bytes` that no live lease holds; a lease `out` held is returned first. A
  // bounded pool with no free buffer that fits and no room left to carve one refuses
  // (ncclInternalError) and notes it.
  Result Take(size_t bytes, BufferLease* out);
  // The size class of the latest refused Take since the last call (0: none), then forgets it.
  size_t TakeShortfall();

  // Whether every device use of every buffer has run, without waiting (EpochFence::UsesEnded).
  Result UsesEnded(bool* ended);

  size_t capacity() const;  // a bounded pool's reservation
  size_t buffers_allocated() const;
  size_t bytes_allocated() const;

 private:
  friend class BufferLease;
  void Give(PooledBuffer* buffer);
  // Whole 4 KiB pages, eight classes per power of two: above 32 KiB a buffer exceeds the request
  // that carved it by less than an eighth, below by less than a page (power-of-two classes cost
  // up to 2x, and hpZ keeps one buffer per partition for a whole step: 0.69 MiB partitions took
  // 1 MiB each).
  static constexpr size_t kPage = 4096;
  static constexpr size_t kClassesPerOctave = 8;
  static size_t SizeClass(size_t bytes);
  Result NewBuffer(size_t size, std::unique_ptr<DeviceMemory>* out);

  Backend& backend_;
  const bool fence_enabled_;
  const bool bounded_;
  const std::unique_ptr<DeviceMemory> reservation_;
  FenceEvents fence_events_;  // before buffers_: their fences give events back to it
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<PooledBuffer>> buffers_;
  // Bounded: carved once, never given back to the reservation (a carved buffer keeps its fence,
  // so no later user of its bytes can skip the waits for the earlier ones).
  size_t carved_ = 0;
  size_t shortfall_ = 0;
};

}  // namespace zpp
