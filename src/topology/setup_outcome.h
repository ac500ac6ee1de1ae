// One rank's set-up failure is every rank's fallback. Communicator set-up is a chain of
// collectives (topology, configuration agreement, sub-communicator splits); a rank that gave up
// half-way would leave the others waiting in the next one. So every rank runs every stage's
// collective whatever it found itself, and after each fallible stage all ranks say in one small
// exchange whether they succeeded: all take the same decision from the same bytes.
#pragma once

#include <string>
#include <vector>

#include "topology/byte_all_gather.h"

namespace zpp::topology {

struct SetUpOutcome {
  bool all_ok = true;
  std::vector<int> failed_ranks;  // in rank order
  std::string Describe() const;   // "rank 2 failed", "ranks 0, 3 failed"
};

// Collective over the exchange's ranks: every rank calls it with whether its own part of the
// stage succeeded, and gets the same outcome.
Result AgreeOnOutcome(topology::ByteAllGather& exchange, bool ok, SetUpOutcome* out);

}  // namespace zpp::topology
