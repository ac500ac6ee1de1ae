// A simulated device stream: an in-order worker thread. Work runs in enqueue order, one task at
// a time, concurrently with the host and with other streams, as on a GPU.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "backend/backend.h"

namespace zpp::sim {

class SimStream final : public Stream {
 public:
  SimStream();
  ~SimStream() override;  // runs what is queued, then stops
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  void Enqueue(std::function<void()> task);
  // Blocks the calling host thread until every task enqueued so far has run.
  void Synchronize();
  // Tests: every task from now on starts this much later (a slow kernel).
  void SetTaskDelay(std::chrono::microseconds delay) { delay_us_.store(delay.count()); }

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> tasks_;
  uint64_t enqueued_ = 0;
  uint64_t finished_ = 0;
  bool stopping_ = false;
  std::atomic<int64_t> delay_us_{0};
  std::thread worker_;  // last: starts after the fields above exist
};

// A simulated CUDA event. Record marks a point in a stream; a wait enqueued on another stream
// blocks that stream (never the host) until the point of the latest Record before the wait.
class SimEvent final : public Event {
 public:
  SimEvent();
  void Record(SimStream& stream);
  void MakeStreamWait(SimStream& stream);
  // Blocks the calling host thread until the latest Record has been reached.
  void Synchronize();

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable reached;
    uint64_t recorded = 0;   // host side: how many Records were issued
    uint64_t completed = 0;  // device side: the latest Record the stream has reached
  };
  // Shared with queued tasks, which may outlive the event (CUDA allows destroying an event
  // with work pending).
  std::shared_ptr<State> state_;
};

}  // namespace zpp::sim
