#include "sim/stream_order_checker.h"

#include <algorithm>
#include <cstdio>

namespace zpp::sim {

void StreamOrderChecker::Allocated(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto first = reinterpret_cast<uintptr_t>(data);
  // Freed allocations that overlapped these addresses are gone.
  auto it = allocations_.upper_bound(first);
  if (it != allocations_.begin()) --it;
  while (it != allocations_.end() && it->first < first + bytes) {
    if (it->first + it->second.bytes > first) {
      it = allocations_.erase(it);
    } else {
      ++it;
    }
  }
  allocations_[first] = Allocation{bytes, {}};
}

void StreamOrderChecker::Record(uintptr_t event, uintptr_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_[event] = streams_[stream];
}

void StreamOrderChecker::Wait(uintptr_t stream, uintptr_t event) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = events_.find(event);
  if (found == events_.end()) return;  // never recorded: nothing to wait for
  Clock& clock = streams_[stream];
  for (const auto& [other, tick] : found->second) clock[other] = std::max(clock[other], tick);
}

bool StreamOrderChecker::Ordered(const Use& use, uintptr_t stream, const Clock& clock) const {
  if (use.stream == stream) return true;  // stream order
  const auto seen = clock.find(use.stream);
  return seen != clock.end() && seen->second >= use.tick;
}

void StreamOrderChecker::Check(uintptr_t stream, const Clock& clock, uint64_t tick,
                               const char* what, const Access& access) {
  const auto address = reinterpret_cast<uintptr_t>(access.data);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin() || access.bytes == 0) return;
  --it;
  Allocation& allocation = it->second;
  if (address >= it->first + allocation.bytes) return;  // not the backend's memory
  const size_t offset = address - it->first;
  const size_t end = std::min(offset + access.bytes, allocation.bytes);
  const auto overlaps = [&](const Use& use) {
    return use.offset < end && offset < use.offset + use.bytes;
  };
  for (const Use& use : allocation.uses) {
    if (!overlaps(use) || !(use.write || access.write) || Ordered(use, stream, clock)) continue;
    if (violation_count_++ < kKeptViolations) {
      char line[256];
      std::snprintf(line, sizeof(line),
                    "%s %s bytes [%zu, %zu) of a %zu-byte buffer %#zx on stream %#zx, not ordered "
                    "after %s's %s of [%zu, %zu) on stream %#zx",
                    what, access.write ? "writes" : "reads", offset, end, allocation.bytes,
                    static_cast<size_t>(it->first), static_cast<size_t>(stream), use.what,
                    use.write ? "write" : "read", use.offset, use.offset + use.bytes,
                    static_cast<size_t>(use.stream));
      violations_.emplace_back(line);
    }
  }
  if (access.write) {
    // Uses inside the write and ordered before it need no more checking: whatever must follow
    // them must follow the write.
    std::erase_if(allocation.uses, [&](const Use& use) {
      return use.offset >= offset && use.offset + use.bytes <= end && Ordered(use, stream, clock);
    });
  } else {
    // A later read of the same bytes on the same stream stands for the earlier one.
    std::erase_if(allocation.uses, [&](const Use& use) {
      return !use.write && use.stream == stream && use.offset == offset &&
             use.bytes == end - offset;
    });
  }
  allocation.uses.push_back(Use{offset, end - offset, stream, tick, access.write, what});
}

void StreamOrderChecker::Enqueue(uintptr_t stream, const char* what,
                                 std::span<const Access> accesses) {
  std::lock_guard<std::mutex> lock(mutex_);
  Clock& clock = streams_[stream];
  const uint64_t tick = ++clock[stream];
  for (const Access& access : accesses) Check(stream, clock, tick, what, access);
}

size_t StreamOrderChecker::violation_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return violation_count_;
}

std::vector<std::string> StreamOrderChecker::violations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return violations_;
}

}  // namespace zpp::sim
