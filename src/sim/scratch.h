// Host buffers that one thread's collectives reuse from call to call. A buffer allocated per
// call of a multi-MiB collective is fresh memory each time: a page fault and a zeroed page per
// 4 KiB, which cost the CPU all-reduce more than its sums (docs/benchmarks.md, "The CPU
// all-reduce's own cost"). Each sim stream runs its work on one thread, so no two calls share a
// thread's buffers at once; a call holds a slot only until it returns.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

namespace zpp::sim {

class Scratch {
 public:
  static constexpr size_t kSlots = 4;

  // At least `bytes` in `slot`, contents unspecified, until this thread takes the slot again.
  std::byte* Take(size_t slot, size_t bytes);
  template <typename T>
  T* TakeArray(size_t slot, size_t count) {
    return reinterpret_cast<T*>(Take(slot, count * sizeof(T)));
  }

  // The calling thread's scratch (kept for the thread's life, as large as its largest call).
  static Scratch& OfThisThread();

 private:
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    size_t bytes = 0;
  };
  std::array<Buffer, kSlots> buffers_;
};

}  // namespace zpp::sim
