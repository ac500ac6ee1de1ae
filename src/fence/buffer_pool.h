// Reusable device buffers for plans (staging for quantized pieces, receive areas), each with
// its own EpochFence. Handing a buffer out never blocks the host: the fence orders the device
// work of its successive users instead.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "fence/epoch_fence.h"

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
  BufferPool(Backend& backend, bool fence_enabled);

  // A buffer of at least `bytes` that no live lease holds (allocated if none is free).
  Result Take(size_t bytes, BufferLease* out);
  size_t buffers_allocated() const;
  size_t bytes_allocated() const;

 private:
  friend class BufferLease;
  void Give(PooledBuffer* buffer);
  // Buffers come in power-of-two sizes from 4 KiB, so that leases of similar sizes share.
  static size_t SizeClass(size_t bytes);

  Backend& backend_;
  const bool fence_enabled_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<PooledBuffer>> buffers_;
};

}  // namespace zpp
