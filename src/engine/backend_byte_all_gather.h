// A small exchange among a backend's world group (topology::ByteAllGather): the topology records
// and the configuration agreement at set-up, one all-gather read back with one host wait.
// Reserve makes the buffers and the event at set-up for exchanges that run later, on the
// collective path, where nothing fallible may be made (docs/architecture.md, contract 3).
#pragma once

#include <memory>

#include "backend/backend.h"
#include "topology/byte_all_gather.h"

namespace zpp {

class BackendByteAllGather final : public topology::ByteAllGather {
 public:
  BackendByteAllGather(Backend& backend, Stream& stream) : backend_(backend), stream_(stream) {}
  int rank() const override { return backend_.rank(); }
  int size() const override { return backend_.world_size(); }
  // Exchanges of up to `bytes` a rank then use what this makes; larger ones make their own.
  Result Reserve(size_t bytes);
  Result AllGather(std::span<const std::byte> mine, std::span<std::byte> all) override;

 private:
  struct Buffers {
    std::unique_ptr<DeviceMemory> send, recv;
    std::unique_ptr<Event> done;
  };
  Result Make(size_t bytes, Buffers* buffers);

  Backend& backend_;
  Stream& stream_;
  Buffers reserved_;
  size_t reserved_bytes_ = 0;
};

}  // namespace zpp
