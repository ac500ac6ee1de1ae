#include "sim/sim_stream.h"

namespace zpp::sim {

SimStream::SimStream() : queue_(std::make_shared<Queue>()) {}

SimStream::Queue::Queue() : worker_([this] { Run(); }) {}

SimStream::Queue::~Queue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void SimStream::Queue::Enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
    ++enqueued_;
  }
  changed_.notify_all();
}

void SimStream::Queue::Synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = enqueued_;
  changed_.wait(lock, [&] { return finished_ >= target; });
}

void SimStream::Queue::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and everything queued has run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    if (const int64_t delay = delay_us.load(); delay > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(delay));
    }
    task();
    lock.lock();
    ++finished_;
    changed_.notify_all();
  }
}

SimEvent::SimEvent(bool timing) : state_(std::make_shared<State>()), timing_(timing) {}

void SimEvent::Record(SimStream& stream, std::optional<double> at_us) {
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    generation = ++state_->recorded;
    state_->pending.insert(generation);
  }
  stream.Enqueue([state = state_, generation, at_us, timing = timing_] {
    double now_us = 0;
    if (timing) {
      const auto now = std::chrono::steady_clock::now().time_since_epoch();
      now_us = at_us ? *at_us : std::chrono::duration<double, std::micro>(now).count();
    }
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->pending.erase(generation);
      if (timing) state->time_us = now_us;
    }
    state->reached.notify_all();
  });
}

void SimEvent::MakeStreamWait(SimStream& stream) {
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    target = state_->recorded;
  }
  if (target == 0) return;  // never recorded: CUDA treats the wait as satisfied
  stream.Enqueue([state = state_, target] {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->reached.wait(lock, [&] { return state->pending.count(target) == 0; });
  });
}

bool SimEvent::Reached() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->pending.count(state_->recorded) == 0;
}

double SimEvent::TimeUs() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->time_us;
}

void SimEvent::Synchronize() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  const uint64_t target = state_->recorded;
  state_->reached.wait(lock, [&] { return state_->pending.count(target) == 0; });
}

}  // namespace zpp::sim
