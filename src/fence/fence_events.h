// The events that epoch fences record the ends of buffer uses on (fence/epoch_fence.h).
//
// Creating an event can fail (a CUDA event is a driver object), and a failure on the collective
// path is one rank's alone while its peers wait in the plan's collectives (contract 3). So a
// communicator makes its fences' events at set-up, where the ranks agree on the outcome
// (Reserve), and from then on never creates one: a fence takes a reserved event per use it must
// remember and gives it back when that use needs no more waiting on.
//
// When the reserve runs out (more buffers and streams in flight than set-up foresaw), a fence
// records on the one *shared* event instead, chained: the recording stream first waits for the
// shared event's previous record, so its latest record follows every use ever recorded on it. A
// wait on it then waits for at least the use it stands for (and perhaps for later ones, on other
// streams: correct, with less overlap). Nothing fails and no rank decides differently: only the
// order of device work on this rank tightens. The first time, one INFO line says so.
//
// Without Reserve (the CPU backend, tests that drive an engine directly) events are made as
// fences first need them.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"

namespace zpp {

class FenceEvents {
 public:
  explicit FenceEvents(Backend& backend) : backend_(backend) {}

  // At set-up: makes `count` events and the shared one; from then on no event is created.
  Result Reserve(size_t count);

  // An event for the end of one use, or the shared event (*shared true) when none is left.
  Result Acquire(Event** out, bool* shared);
  // Gives back an event Acquire handed out (not the shared one).
  void Release(Event* event);
  // Records the shared event on `stream`, after its previous record (the chain above).
  Result RecordShared(Stream& stream);

  size_t free_events() const;

 private:
  Backend& backend_;
  mutable std::mutex mutex_;
  bool reserved_ = false;
  std::vector<std::unique_ptr<Event>> owned_;
  std::vector<Event*> free_;
  std::unique_ptr<Event> shared_;
  bool shared_recorded_ = false;
  StreamIdentity shared_stream_;  // where the shared event was last recorded
  bool told_shared_ = false;
};

}  // namespace zpp
