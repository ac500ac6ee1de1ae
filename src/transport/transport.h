// How the sim backend moves bytes among the members of a group. The backend decides what moves
// (and counts it, per link, as NCCL's rings would); a transport only carries it: between threads
// of one process (InProcessTransport, the default) or between processes (UcpTransport).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "backend/backend.h"
#include "log/check.h"

namespace zpp::transport {

// The communicator call that the operations after BeginCall belong to. Every member of a call
// must be in the same call: `number` counts the communicator's calls (0 is its set-up), and
// `signature` is what they must agree on (the collective, its count, dtype, reduction and root,
// hashed); `description` names the call in an error ("all_gather of 1024 x float32 per rank").
struct CallLabel {
  uint64_t number = 0;
  uint32_t signature = 0;
  std::string description = "set-up";
};

// One group as the calling rank sees it.
struct GroupView {
  GroupKind kind;
  std::span<const int> members;  // world ranks, in group order
  int my_index = 0;
};

// Every call runs on the caller's stream worker and blocks it until this rank's part is done
// (its receive buffers hold the data and its send buffers may be reused). `sequence` is the
// caller's count of collectives on this group (or of messages to / from this peer), assigned
// when the work was enqueued: members match calls by it, as NCCL matches calls by order.
// A transport that cannot complete a call (a peer gone, nothing for ZPP_TIMEOUT seconds) returns
// ncclRemoteError and fails every later call at once: a broken job never hangs.
class Transport {
 public:
  virtual ~Transport() = default;

  // Labels what follows, until the next BeginCall: a transport that can tell members of different
  // calls apart refuses to match them and fails them on every rank, both calls named. The
  // in-process transport's threads run one test program and do not check.
  virtual void BeginCall(const CallLabel& label) { (void)label; }
  // Why the transport broke ("" while it works): the error a caller shows its user.
  virtual std::string Failure() const { return ""; }

  // Where part k of the message to or from group member i sits.
  using PartAt = std::function<const std::byte*(size_t member, size_t part)>;
  using PartInto = std::function<std::byte*(size_t member, size_t part)>;
  // A message of `parts` parts of `bytes` to every other member (part k to member j read from
  // send_at(j, k)) and one from every other member (part k from member i landing at
  // recv_at(i, k)), so that pieces spread over a buffer move without a copy. Parts must not
  // overlap; the finders may be called from the other members' threads until the call returns.
  // This rank's own parts are copied from send_at(my_index, k) to recv_at(my_index, k), or stay
  // where they are where recv_at(my_index, k) is nullptr (allowed for my_index only). `what`
  // names the collective in an error.
  virtual Result ExchangeParts(int rank, const GroupView& group, uint64_t sequence, size_t parts,
                               size_t bytes, const PartAt& send_at, const PartInto& recv_at,
                               const char* what) = 0;
  // Point to point between world ranks; `kind` is the group the call came through.
  virtual Result Send(int rank, GroupKind kind, int to, uint64_t sequence, const void* send,
                      size_t bytes) = 0;
  virtual Result Recv(int rank, GroupKind kind, int from, uint64_t sequence, void* recv,
                      size_t bytes) = 0;

  // The two dense forms, one part per member: every group collective is an ExchangeParts, so
  // members of one call always meet in the same form.
  // recv holds members.size() pieces of `bytes`, piece i from member i; send may be piece
  // my_index of recv (in place).
  Result AllGather(int rank, const GroupView& group, uint64_t sequence, const void* send,
                   void* recv, size_t bytes) {
    const auto* source = static_cast<const std::byte*>(send);
    auto* target = static_cast<std::byte*>(recv);
    return ExchangeParts(
        rank, group, sequence, 1, bytes, [source](size_t, size_t) { return source; },
        [target, bytes](size_t member, size_t) { return target + member * bytes; }, "all-gather");
  }
  // Piece j of send goes to member j and lands as piece my_index of its recv (send and recv do
  // not overlap).
  Result AllToAll(int rank, const GroupView& group, uint64_t sequence, const void* send, void* recv,
                  size_t bytes) {
    const auto* source = static_cast<const std::byte*>(send);
    auto* target = static_cast<std::byte*>(recv);
    return ExchangeParts(
        rank, group, sequence, 1, bytes,
        [source, bytes](size_t member, size_t) { return source + member * bytes; },
        [target, bytes](size_t member, size_t) { return target + member * bytes; }, "all-to-all");
  }
};

}  // namespace zpp::transport
