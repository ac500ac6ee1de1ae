// Two communicators in each process of a two-rank zpp-launch job, over TCP as across machines
// (HSDP's shard and replica groups): the ranks alternate a large exchange on the first and a
// small one on the second, or run each communicator's exchanges on a thread of its own. UCX
// reads a socket only while its worker progresses: a rank busy on the second communicator must
// still progress the first, whose peer waits there for bytes that this rank has not yet read
// (bench/results/two_communicators_cpu.md).
#pragma once

#include "log/check.h"
#include "sim/launched_world.h"

namespace zpp::test {

struct TwoCommunicatorsRun {
  int rounds_done = 0;                 // rounds whose exchanges both succeeded, data checked
  Result first_failure = ncclSuccess;  // the first failed call's result
};

// `job` holds the first communicator's transport (taken to be on other machines); the second is
// opened here, its addresses exchanged over the first. `on_threads`: each communicator's calls
// on a thread of its own, as the torch backend runs them, both at once.
TwoCommunicatorsRun RunTwoCommunicators(const sim::LaunchedJob& job, int rounds, bool on_threads);

}  // namespace zpp::test
