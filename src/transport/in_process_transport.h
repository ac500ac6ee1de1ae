// The transport of the threaded simulation: every rank is a thread of this process, and a
// collective is a rendezvous where each member copies straight from the others' buffers.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "transport/rendezvous.h"
#include "transport/transport.h"

namespace zpp::transport {

class InProcessTransport final : public Transport {
 public:
  // A member waits at most `deadline` for the others (by default ZPP_TIMEOUT), then its call
  // fails with ncclRemoteError and a WARN naming the collective.
  InProcessTransport();
  explicit InProcessTransport(std::chrono::milliseconds deadline) : deadline_(deadline) {}

  Result ExchangeParts(int rank, const GroupView& group, uint64_t sequence, size_t parts,
                       size_t bytes, const PartAt& send_at, const PartInto& recv_at,
                       const char* what) override;
  Result Send(int rank, GroupKind kind, int to, uint64_t sequence, const void* send,
              size_t bytes) override;
  Result Recv(int rank, GroupKind kind, int from, uint64_t sequence, void* recv,
              size_t bytes) override;

 private:
  // A group is named by its kind and its first member; a pair by (from, to).
  Rendezvous& GroupRendezvous(const GroupView& group);
  Rendezvous& PairRendezvous(int from, int to);
  Result Missed(const char* collective, GroupKind kind, int rank, uint64_t sequence) const;

  const std::chrono::milliseconds deadline_;

  std::mutex mutex_;
  std::map<std::pair<GroupKind, int>, std::unique_ptr<Rendezvous>> groups_;
  std::map<std::pair<int, int>, std::unique_ptr<Rendezvous>> pairs_;
};

}  // namespace zpp::transport
