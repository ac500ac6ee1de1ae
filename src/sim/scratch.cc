#include "sim/scratch.h"

namespace zpp::sim {

std::byte* Scratch::Take(size_t slot, size_t bytes) {
  Buffer& buffer = buffers_.at(slot);
  if (buffer.bytes < bytes) {
    buffer.data.reset();  // the old one first: never both at once
    buffer.data = std::make_unique_for_overwrite<std::byte[]>(bytes);
    buffer.bytes = bytes;
  }
  return buffer.data.get();
}

Scratch& Scratch::OfThisThread() {
  thread_local Scratch scratch;
  return scratch;
}

}  // namespace zpp::sim
