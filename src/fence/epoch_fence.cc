#include "fence/epoch_fence.h"

namespace zpp {

EpochFence::EpochFence(Backend& backend, bool enabled) : backend_(backend), enabled_(enabled) {}

uint64_t EpochFence::epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_;
}

Result EpochFence::WaitFor(Stream& stream, const StreamEvent& use) {
  // Stream order suffices on the same stream; a stream not known to be the same always waits.
  if (use.event == nullptr || use.stream.SameAs(stream.identity())) return ncclSuccess;
  return backend_.StreamWaitEvent(stream, *use.event);
}

// Records the end of a read on `stream`'s own event, made on its first read.
Result EpochFence::RecordRead(Stream& stream) {
  for (StreamEvent& entry : reads_) {
    if (entry.stream.SameAs(stream.identity())) return backend_.RecordEvent(*entry.event, stream);
  }
  StreamEvent entry{stream.identity(), nullptr};
  ZPP_CHECK(backend_.CreateEvent(&entry.event));
  ZPP_CHECK(backend_.RecordEvent(*entry.event, stream));
  reads_.push_back(std::move(entry));
  return ncclSuccess;
}

Result EpochFence::BeginWrite(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return ncclSuccess;
  ZPP_CHECK(WaitFor(stream, last_write_));
  for (const StreamEvent& read : reads_) ZPP_CHECK(WaitFor(stream, read));
  return ncclSuccess;
}

Result EpochFence::EndWrite(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++epoch_;
  if (!enabled_) return ncclSuccess;
  // The new write follows every earlier use, so they need no more waiting on.
  reads_.clear();
  if (last_write_.event == nullptr) ZPP_CHECK(backend_.CreateEvent(&last_write_.event));
  last_write_.stream = stream.identity();
  return backend_.RecordEvent(*last_write_.event, stream);
}

Result EpochFence::BeginRead(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return ncclSuccess;
  return WaitFor(stream, last_write_);
}

Result EpochFence::EndRead(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return ncclSuccess;
  return RecordRead(stream);
}

}  // namespace zpp
