// A simulated device stream: an in-order worker thread. Work runs in enqueue order, one task at
// a time, concurrently with the host and with other streams, as on a GPU.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "backend/backend.h"

namespace zpp::sim {

class SimStream final : public Stream {
 public:
  SimStream();
  // Another handle on `stream`'s queue, as CudaStream::Borrow wraps the caller's CUDA stream: a
  // different object, the same stream (and identity). The queue lives while any handle does.
  static SimStream Borrow(const SimStream& stream) { return SimStream(stream.queue_); }
  SimStream(SimStream&&) = default;
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  StreamIdentity identity() const override {
    return {reinterpret_cast<uintptr_t>(queue_.get()), true};
  }
  void Enqueue(std::function<void()> task) { queue_->Enqueue(std::move(task)); }
  // Blocks the calling host thread until every task enqueued so far has run.
  void Synchronize() { queue_->Synchronize(); }
  // Tests: every task from now on starts this much later (a slow kernel).
  void SetTaskDelay(std::chrono::microseconds delay) { queue_->delay_us.store(delay.count()); }

 private:
  class Queue {
   public:
    Queue();
    ~Queue();  // runs what is queued, then stops
    void Enqueue(std::function<void()> task);
    void Synchronize();
    std::atomic<int64_t> delay_us{0};

   private:
    void Run();

    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::function<void()>> tasks_;
    uint64_t enqueued_ = 0;
    uint64_t finished_ = 0;
    bool stopping_ = false;
    std::thread worker_;  // last: starts after the fields above exist
  };
  explicit SimStream(std::shared_ptr<Queue> queue) : queue_(std::move(queue)) {}

  std::shared_ptr<Queue> queue_;
};

// A simulated CUDA event. Record marks a point in a stream; a wait enqueued on another stream
// blocks that stream (never the host) until the point of the latest Record before the wait.
class SimEvent final : public Event {
 public:
  // `timing`: the event keeps when its latest record was reached (Backend::CreateTimingEvent).
  explicit SimEvent(bool timing = false);
  // A timing event keeps `at_us`, when given (a test's clock, SimBackend's
  // SetCallClockForTesting), or else the steady clock's time when the stream reaches the record.
  void Record(SimStream& stream, std::optional<double> at_us = std::nullopt);
  bool timing() const { return timing_; }
  void MakeStreamWait(SimStream& stream);
  // Blocks the calling host thread until the latest Record has been reached.
  void Synchronize();
  // Whether the latest Record has been reached, without waiting.
  bool Reached() const;
  // The time the latest reached record keeps, in microseconds.
  double TimeUs() const;

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable reached;
    // As CUDA's: a wait is for the latest record when it is issued, and records of one event on
    // different streams (an event reused by another fence) may complete out of order.
    uint64_t recorded = 0;       // host side: how many Records were issued
    std::set<uint64_t> pending;  // records their streams have not reached yet
    double time_us = 0;
  };
  // Shared with queued tasks, which may outlive the event (CUDA allows destroying an event
  // with work pending).
  std::shared_ptr<State> state_;
  bool timing_ = false;
};

}  // namespace zpp::sim
