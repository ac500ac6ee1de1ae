#include "fence/epoch_fence.h"

namespace zpp {

EpochFence::EpochFence(Backend& backend, bool enabled) : backend_(backend), enabled_(enabled) {}

uint64_t EpochFence::epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_;
}

// Records on `stream`'s own event in `events`, reusing it if that stream has one already: an
// event's latest record is what waits see, so one event per stream is enough.
Result EpochFence::RecordOn(Stream& stream, std::vector<StreamEvent>& events) {
  for (StreamEvent& entry : events) {
    if (entry.stream == &stream) return backend_.RecordEvent(*entry.event, stream);
  }
  StreamEvent entry{&stream, nullptr};
  ZPP_CHECK(backend_.CreateEvent(&entry.event));
  ZPP_CHECK(backend_.RecordEvent(*entry.event, stream));
  events.push_back(std::move(entry));
  return ncclSuccess;
}

Result EpochFence::BeginWrite(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return ncclSuccess;
  for (StreamEvent& entry : last_write_) {
    if (entry.stream != &stream) ZPP_CHECK(backend_.StreamWaitEvent(stream, *entry.event));
  }
  for (StreamEvent& entry : reads_) {
    if (entry.stream != &stream) ZPP_CHECK(backend_.StreamWaitEvent(stream, *entry.event));
  }
  return ncclSuccess;
}

Result EpochFence::EndWrite(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++epoch_;
  if (!enabled_) return ncclSuccess;
  // The new write follows every earlier use, so they need no more waiting on.
  reads_.clear();
  if (!last_write_.empty() && last_write_.front().stream != &stream) last_write_.clear();
  return RecordOn(stream, last_write_);
}

Result EpochFence::BeginRead(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return ncclSuccess;
  for (StreamEvent& entry : last_write_) {
    if (entry.stream != &stream) ZPP_CHECK(backend_.StreamWaitEvent(stream, *entry.event));
  }
  return ncclSuccess;
}

Result EpochFence::EndRead(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return ncclSuccess;
  return RecordOn(stream, reads_);
}

}  // namespace zpp
