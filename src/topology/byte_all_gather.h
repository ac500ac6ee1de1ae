// The one collective the topology exchange needs: every rank contributes the same number of
// bytes and receives everyone's, in rank order. The plugin implements it with one small NCCL
// all-gather at communicator set-up, the CPU simulation with its simulated collective, tests with
// threads. Keeping it this small keeps NCCL out of the topology code.
#pragma once

#include <cstddef>
#include <span>

#include "log/check.h"

namespace zpp::topology {

class ByteAllGather {
 public:
  virtual ~ByteAllGather() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // `all` has size() * mine.size() bytes; rank r's contribution lands at r * mine.size().
  // Every rank of the communicator must call it exactly once per exchange, whatever it found
  // locally, or the others wait forever.
  virtual Result AllGather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
};

}  // namespace zpp::topology
