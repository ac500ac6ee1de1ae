#include "fence/buffer_pool.h"

#include <bit>

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

BufferPool::BufferPool(Backend& backend, bool fence_enabled)
    : backend_(backend), fence_enabled_(fence_enabled) {}

size_t BufferPool::SizeClass(size_t bytes) {
  constexpr size_t kMinimum = 4096;
  return bytes <= kMinimum ? kMinimum : std::bit_ceil(bytes);
}

Result BufferPool::Take(size_t bytes, BufferLease* out) {
  const size_t size = SizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& buffer : buffers_) {
    if (!buffer->leased && buffer->memory->size() == size) {
      buffer->leased = true;
      *out = BufferLease(this, buffer.get());
      return ncclSuccess;
    }
  }
  auto buffer = std::make_unique<PooledBuffer>();
  ZPP_CHECK(backend_.Allocate(size, &buffer->memory));
  buffer->fence = std::make_unique<EpochFence>(backend_, fence_enabled_);
  buffer->leased = true;
  *out = BufferLease(this, buffer.get());
  buffers_.push_back(std::move(buffer));
  return ncclSuccess;
}

void BufferPool::Give(PooledBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  buffer->leased = false;
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
