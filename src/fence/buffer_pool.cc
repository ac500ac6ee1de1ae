#include "fence/buffer_pool.h"

#include <algorithm>
#include <bit>
#include <cstddef>

namespace zpp {

BufferLease::BufferLease(BufferLease&& other) noexcept
    : pool_(other.pool_), buffer_(other.buffer_) {
  other.pool_ = nullptr;
  other.buffer_ = nullptr;
}

BufferLease& BufferLease::operator=(BufferLease&& other) noexcept {
  if (this != &other) {
    Return();
    pool_ = other.pool_;
    buffer_ = other.buffer_;
    other.pool_ = nullptr;
    other.buffer_ = nullptr;
  }
  return *this;
}

BufferLease::~BufferLease() { Return(); }

void BufferLease::Return() {
  if (pool_ != nullptr && buffer_ != nullptr) pool_->Give(buffer_);
  pool_ = nullptr;
  buffer_ = nullptr;
}

namespace {

// A carved buffer: bytes of the reservation, which owns them.
class CarvedMemory final : public DeviceMemory {
 public:
  CarvedMemory(void* data, size_t size) : data_(data), size_(size) {}
  void* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* const data_;
  const size_t size_;
};

}  // namespace

BufferPool::BufferPool(Backend& backend, bool fence_enabled)
    : backend_(backend), fence_enabled_(fence_enabled), bounded_(false), fence_events_(backend) {}

BufferPool::BufferPool(Backend& backend, bool fence_enabled,
                       std::unique_ptr<DeviceMemory> reservation)
    : backend_(backend),
      fence_enabled_(fence_enabled),
      bounded_(true),
      reservation_(std::move(reservation)),
      fence_events_(backend) {}

Result BufferPool::Prepare(size_t events) {
  // A pool that can give no buffer (a bounded one with nothing reserved) has no fence to record.
  const bool buffers = !bounded_ || capacity() != 0;
  return fence_enabled_ && buffers ? fence_events_.Reserve(events) : ncclSuccess;
}

size_t BufferPool::capacity() const { return reservation_ ? reservation_->size() : 0; }

Result BufferPool::NewBuffer(size_t size, std::unique_ptr<DeviceMemory>* out) {
  if (!bounded_) return backend_.Allocate(size, out);
  if (size > capacity() - carved_) {
    shortfall_ = size;
    return ncclInternalError;
  }
  // Sizes are whole pages: every buffer keeps the reservation's alignment.
  *out =
      std::make_unique<CarvedMemory>(static_cast<std::byte*>(reservation_->data()) + carved_, size);
  carved_ += size;
  return ncclSuccess;
}

size_t BufferPool::TakeShortfall() {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t shortfall = shortfall_;
  shortfall_ = 0;
  return shortfall;
}

size_t BufferPool::SizeClass(size_t bytes) {
  if (bytes <= kPage) return kPage;
  const size_t step = std::max(kPage, std::bit_floor(bytes - 1) / kClassesPerOctave);
  return (bytes + step - 1) / step * step;
}

Result BufferPool::Take(size_t bytes, BufferLease* out) {
  const size_t size = SizeClass(bytes);
  // A free buffer serves a request of at least half its size, as a power-of-two class did;
  // the smallest that fits goes first (ties: the earliest carved), the same choice on every rank.
  const size_t largest = std::max(size, 2 * bytes);
  // Before the lock: returning a lease of this pool takes it (Give).
  *out = BufferLease();
  std::lock_guard<std::mutex> lock(mutex_);
  PooledBuffer* best = nullptr;
  for (auto& buffer : buffers_) {
    const size_t have = buffer->memory->size();
    if (buffer->leased || have < size || have > largest) continue;
    if (best == nullptr || have < best->memory->size()) best = buffer.get();
  }
  if (best != nullptr) {
    best->leased = true;
    *out = BufferLease(this, best);
    return ncclSuccess;
  }
  auto buffer = std::make_unique<PooledBuffer>();
  // No ZPP_CHECK: a bounded pool's refusal is an expected answer, which the caller handles.
  if (const Result made = NewBuffer(size, &buffer->memory); made != ncclSuccess) return made;
  buffer->fence = std::make_unique<EpochFence>(backend_, fence_enabled_, fence_events_);
  buffer->leased = true;
  *out = BufferLease(this, buffer.get());
  buffers_.push_back(std::move(buffer));
  return ncclSuccess;
}

void BufferPool::Give(PooledBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffer->leased = false;
}

Result BufferPool::UsesEnded(bool* ended) {
  std::lock_guard<std::mutex> lock(mutex_);
  *ended = true;
  for (auto& buffer : buffers_) {
    ZPP_CHECK(buffer->fence->UsesEnded(ended));
    if (!*ended) break;
  }
  return ncclSuccess;
}

size_t BufferPool::buffers_allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffers_.size();
}

size_t BufferPool::bytes_allocated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const auto& buffer : buffers_) total += buffer->memory->size();
  return total;
}

}  // namespace zpp
