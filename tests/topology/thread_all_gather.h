// A ByteAllGather for tests: one thread per rank, meeting in shared memory. A rank that does not
// arrive makes the others fail after a timeout instead of hanging the test.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "topology/byte_all_gather.h"

namespace zpp::topology::test_support {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size) {}
  int size() const { return size_; }

  Result Gather(int rank, std::span<const std::byte> mine, std::span<std::byte> all,
                std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (buffer_.empty()) buffer_.resize(static_cast<size_t>(size_) * mine.size());
    if (buffer_.size() != all.size() || all.size() != static_cast<size_t>(size_) * mine.size()) {
      return ncclInvalidArgument;
    }
    std::memcpy(buffer_.data() + static_cast<size_t>(rank) * mine.size(), mine.data(), mine.size());
    if (++arrived_ == size_) cv_.notify_all();
    if (!cv_.wait_for(lock, timeout, [this] { return arrived_ == size_; })) {
      return ncclSystemError;
    }
    std::memcpy(all.data(), buffer_.data(), all.size());
    return ncclSuccess;
  }

 private:
  const int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  std::vector<std::byte> buffer_;
};

class ThreadAllGather : public ByteAllGather {
 public:
  ThreadAllGather(ThreadGroup* group, int rank,
                  std::chrono::milliseconds timeout = std::chrono::seconds(20))
      : group_(group), rank_(rank), timeout_(timeout) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  Result AllGather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    ++calls_;
    return group_->Gather(rank_, mine, all, timeout_);
  }
  int calls() const { return calls_; }

 private:
  ThreadGroup* group_;
  int rank_;
  std::chrono::milliseconds timeout_;
  int calls_ = 0;
};

}  // namespace zpp::topology::test_support
