#include "fence/epoch_fence.h"

namespace zpp {

EpochFence::EpochFence(Backend& backend, bool enabled, FenceEvents& events)
    : backend_(backend), enabled_(enabled), events_(events) {}

EpochFence::~EpochFence() {
  Forget(last_write_);
  for (StreamEvent& read : reads_) Forget(read);
}

uint64_t EpochFence::epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_;
}

void EpochFence::Forget(StreamEvent& use) {
  if (use.event != nullptr && !use.shared) events_.Release(use.event);
  use = StreamEvent{};
}

Result EpochFence::WaitFor(Stream& stream, const StreamEvent& use) {
  // Stream order suffices on the same stream; a stream not known to be the same always waits.
  if (use.event == nullptr || use.stream.SameAs(stream.identity())) return ncclSuccess;
  return backend_.StreamWaitEvent(stream, *use.event);
}

// Records the end of `use` on `stream`, on its own event (taken from the reserve on its first
// record), or chained on the shared one.
Result EpochFence::Record(StreamEvent& use, Stream& stream) {
  if (use.event == nullptr) ZPP_CHECK(events_.Acquire(&use.event, &use.shared));
  use.stream = stream.identity();
  return use.shared ? events_.RecordShared(stream) : backend_.RecordEvent(*use.event, stream);
}

Result EpochFence::RecordRead(Stream& stream) {
  for (StreamEvent& entry : reads_) {
    if (entry.stream.SameAs(stream.identity())) return Record(entry, stream);
  }
  reads_.emplace_back();
  return Record(reads_.back(), stream);
}

Result EpochFence::UsesEnded(bool* ended) {
  std::lock_guard<std::mutex> lock(mutex_);
  *ended = true;
  if (last_write_.event != nullptr) ZPP_CHECK(backend_.EventReached(*last_write_.event, ended));
  for (const StreamEvent& read : reads_) {
    if (!*ended) break;
    ZPP_CHECK(backend_.EventReached(*read.event, ended));
  }
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
  // The new write follows every earlier use, so they need no more waiting on: their events go
  // back to the reserve.
  for (StreamEvent& read : reads_) Forget(read);
  reads_.clear();
  return Record(last_write_, stream);
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
