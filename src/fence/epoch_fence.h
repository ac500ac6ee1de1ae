// The epoch fence: makes reuse of a zpp-owned buffer race-free without blocking the host.
//
// DeepSpeed's hpZ filled its secondary partition on one stream and read it on another with no
// event between them, so the reader could see memory only partly written. Here every use of a
// buffer is bracketed: Begin* makes the using stream wait (stream-ordered, capturable in a
// CUDA graph) for the uses it must follow, End* records an event where the use ends.
//   - a read waits for the last write;
//   - a write waits for the last write and for every read since it.
// Each write starts a new epoch, so a reader can also tell which fill it is reading.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "fence/fence_events.h"

namespace zpp {

class EpochFence {
 public:
  // `enabled` false only for tests that show the race (ZPP_FENCE=0): then nothing waits.
  // `events` (the pool's, made at set-up) must outlive the fence.
  EpochFence(Backend& backend, bool enabled, FenceEvents& events);
  ~EpochFence();
  EpochFence(const EpochFence&) = delete;
  EpochFence& operator=(const EpochFence&) = delete;

  Result BeginWrite(Stream& stream);
  Result EndWrite(Stream& stream);
  Result BeginRead(Stream& stream);
  Result EndRead(Stream& stream);

  // Whether every use the fence remembers has run on the device, without waiting: the memory
  // can then be freed (an aborted communicator's, fence_events.h's shared event included).
  Result UsesEnded(bool* ended);

  // Completed-or-enqueued writes so far (host view).
  uint64_t epoch() const;
  bool enabled() const { return enabled_; }

 private:
  // A use's stream is kept by identity: the Stream object may be gone (a borrowed wrapper).
  // `event` is one of `events_`, or its shared event (fence_events.h) when they ran out.
  struct StreamEvent {
    StreamIdentity stream;
    Event* event = nullptr;
    bool shared = false;
  };
  Result RecordRead(Stream& stream);
  Result WaitFor(Stream& stream, const StreamEvent& use);
  Result Record(StreamEvent& use, Stream& stream);
  void Forget(StreamEvent& use);

  Backend& backend_;
  const bool enabled_;
  FenceEvents& events_;
  mutable std::mutex mutex_;
  uint64_t epoch_ = 0;
  // The end of the latest write. One event serves whatever stream wrote: waits see an event's
  // latest record. Readers each need their own, since several may be in flight at once.
  StreamEvent last_write_;
  std::vector<StreamEvent> reads_;  // one per stream that read since that write
};

}  // namespace zpp
