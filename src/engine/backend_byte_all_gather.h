// A small exchange among a backend's world group (topology::ByteAllGather): the topology records
// and the configuration agreement at set-up, one all-gather read back with one host wait.
#pragma once

#include "backend/backend.h"
#include "topology/byte_all_gather.h"

namespace zpp {

class BackendByteAllGather final : public topology::ByteAllGather {
 public:
  BackendByteAllGather(Backend& backend, Stream& stream) : backend_(backend), stream_(stream) {}
  int rank() const override { return backend_.rank(); }
  int size() const override { return backend_.world_size(); }
  Result AllGather(std::span<const std::byte> mine, std::span<std::byte> all) override;

 private:
  Backend& backend_;
  Stream& stream_;
};

}  // namespace zpp
