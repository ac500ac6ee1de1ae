// Where the members of one simulated group meet for a collective, as NCCL's kernels do: each
// member's stream blocks in Arrive until every member's stream has reached the same collective,
// and in Depart until every member has finished reading the others' send buffers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace zpp::sim {

class Rendezvous {
 public:
  struct Buffers {
    std::vector<const void*> send;  // by member index
    std::vector<void*> recv;
  };

  explicit Rendezvous(int members) : members_(members) {}

  // Collective `sequence` (the members' call count on this group) from member `member`.
  // Returns every member's buffers once all have arrived; valid until Depart.
  const Buffers& Arrive(uint64_t sequence, int member, const void* send, void* recv);
  void Depart(uint64_t sequence);

 private:
  struct Slot {
    Buffers buffers;
    int arrived = 0;
    int departed = 0;
    int left = 0;
  };

  const int members_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<uint64_t, Slot> slots_;  // node-based: references stay valid while others insert
};

}  // namespace zpp::sim
