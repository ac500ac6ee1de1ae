// Point-to-point messages, run the same way by threads and by processes: on each group kind,
// every rank sends to the next member and receives from the previous one, at three sizes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/sim_world.h"
#include "zpp/zpp.h"

namespace zpp::test {

struct PointToPointRun {
  // Per rank (empty for ranks the world does not host): every message received, in order.
  std::vector<std::vector<uint8_t>> received;
  std::vector<std::array<uint64_t, zppNumLinks>> sent_bytes;
  int failures = 0;
};

PointToPointRun RunPointToPoint(sim::SimWorld& world);

}  // namespace zpp::test
