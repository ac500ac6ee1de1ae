// The stream-order checker: as the sim backend enqueues device work, checks that every access to
// memory the backend allocated (zpp's pool, staging, hpZ's buffers) is ordered after each earlier
// conflicting access (a write against anything, a read against a write) by device-side order
// alone: the same stream, or event records and waits between streams (vector clocks). A host
// wait does not count: on a GPU nothing of zpp's may rest on one (contract 1; a framework never
// synchronizes between calls, and a future change may move the one host wait hpZ makes). Memory
// the caller owns (tensors) is the framework's to order and is not checked.
//
// Decided when work is enqueued, from the order of records and waits, not from timing: a
// missing fence shows on every run, not only when a stream happens to be slow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace zpp::sim {

class StreamOrderChecker {
 public:
  struct Access {
    const void* data;
    size_t bytes;
    bool write;
  };

  // New device memory: what was recorded for these addresses before (freed memory) is dropped.
  void Allocated(const void* data, size_t bytes);
  void Record(uintptr_t event, uintptr_t stream);
  void Wait(uintptr_t stream, uintptr_t event);
  // One operation `what` enqueued on `stream`, with the memory it touches.
  void Enqueue(uintptr_t stream, const char* what, std::span<const Access> accesses);

  size_t violation_count() const;
  // The first few, described.
  std::vector<std::string> violations() const;

 private:
  using Clock = std::unordered_map<uintptr_t, uint64_t>;
  struct Use {
    size_t offset;
    size_t bytes;
    uintptr_t stream;
    uint64_t tick;
    bool write;
    const char* what;
  };
  struct Allocation {
    size_t bytes;
    std::vector<Use> uses;
  };
  bool Ordered(const Use& use, uintptr_t stream, const Clock& clock) const;
  void Check(uintptr_t stream, const Clock& clock, uint64_t tick, const char* what,
             const Access& access);

  static constexpr size_t kKeptViolations = 8;
  mutable std::mutex mutex_;
  std::map<uintptr_t, Allocation> allocations_;  // by first address
  std::unordered_map<uintptr_t, Clock> streams_;
  std::unordered_map<uintptr_t, Clock> events_;
  size_t violation_count_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace zpp::sim
