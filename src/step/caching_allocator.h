// A model of PyTorch's caching allocator for the step replay's framework buffers: a freed block
// goes back to a free list of its size and the next request of that size takes the block freed
// last. So, as under FSDP2 and DeepSpeed, one address carries many layers within a step (all
// layers of one size share a few blocks) and one layer arrives at different addresses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace zpp::step {

class CachingAllocator {
 public:
  std::byte* Allocate(size_t bytes) {
    std::vector<std::byte*>& free = free_[bytes];
    if (!free.empty()) {
      std::byte* block = free.back();
      free.pop_back();
      return block;
    }
    blocks_.push_back(std::make_unique<std::byte[]>(bytes));
    return blocks_.back().get();
  }
  void Free(std::byte* block, size_t bytes) { free_[bytes].push_back(block); }
  size_t blocks() const { return blocks_.size(); }

 private:
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::map<size_t, std::vector<std::byte*>> free_;
};

}  // namespace zpp::step
