#include "fence/fence_events.h"

#include "log/log.h"

namespace zpp {

Result FenceEvents::Reserve(size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!shared_) ZPP_CHECK(backend_.CreateEvent(&shared_));
  while (owned_.size() < count) {
    std::unique_ptr<Event> event;
    ZPP_CHECK(backend_.CreateEvent(&event));
    free_.push_back(event.get());
    owned_.push_back(std::move(event));
  }
  reserved_ = true;
  return ncclSuccess;
}

Result FenceEvents::Acquire(Event** out, bool* shared) {
  std::lock_guard<std::mutex> lock(mutex_);
  *shared = false;
  if (!free_.empty()) {
    *out = free_.back();
    free_.pop_back();
    return ncclSuccess;
  }
  if (!reserved_) {
    std::unique_ptr<Event> event;
    ZPP_CHECK(backend_.CreateEvent(&event));
    *out = event.get();
    owned_.push_back(std::move(event));
    return ncclSuccess;
  }
  if (!told_shared_) {
    told_shared_ = true;
    ZPP_INFO(kFence,
             "the %zu fence events reserved at set-up are all in use: further buffer uses are "
             "ordered through one shared event (correct; streams may overlap less)",
             owned_.size());
  }
  *out = shared_.get();
  *shared = true;
  return ncclSuccess;
}

void FenceEvents::Release(Event* event) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(event);
}

Result FenceEvents::RecordShared(Stream& stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The chain: this record must follow every earlier one, which the event alone forgets.
  if (shared_recorded_ && !shared_stream_.SameAs(stream.identity())) {
    ZPP_CHECK(backend_.StreamWaitEvent(stream, *shared_));
  }
  ZPP_CHECK(backend_.RecordEvent(*shared_, stream));
  shared_recorded_ = true;
  shared_stream_ = stream.identity();
  return ncclSuccess;
}

size_t FenceEvents::free_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

}  // namespace zpp
