// Where the members of one simulated group meet for a collective, as NCCL's kernels do: each
// member's stream blocks in Arrive until every member's stream has reached the same collective,
// and in Depart until every member has finished reading the others' send buffers.
//
// Every wait is bounded: a member that never comes (a rank that skipped a collective, a plan
// that differs between ranks) makes the others fail after `deadline` instead of hanging, so a
// test of "never hangs" sees a hang as an error in seconds, not as ctest's timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace zpp::transport {

class Rendezvous {
 public:
  struct Buffers {
    std::vector<const void*> send;  // by member index
    std::vector<void*> recv;
  };

  Rendezvous(int members, std::chrono::milliseconds deadline)
      : members_(members), deadline_(deadline) {}

  // Collective `sequence` (the members' call count on this group) from member `member`.
  // Returns every member's buffers once all have arrived, valid until Depart; nullptr when the
  // others did not all arrive within the deadline (then the call is broken for every member:
  // one that comes later fails at once, and no member calls Depart).
  const Buffers* Arrive(uint64_t sequence, int member, const void* send, void* recv);
  // False when the others did not all depart within the deadline.
  bool Depart(uint64_t sequence);

 private:
  struct Slot {
    Buffers buffers;
    int arrived = 0;
    int departed = 0;
    int left = 0;
    bool broken = false;  // a member gave up waiting: nobody may use the buffers any more
  };

  const int members_;
  const std::chrono::milliseconds deadline_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, Slot> slots_;  // node-based: references stay valid while others insert
};

}  // namespace zpp::transport
