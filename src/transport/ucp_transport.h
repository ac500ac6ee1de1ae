// The transport between the processes of a zpp-launch job, over UCX's UCP tag API: shared
// memory between processes of one machine, TCP across machines (UCX picks; UCX_TLS overrides).
// A zpp-launch job is one machine by construction, so there TCP is left out: polling its idle
// sockets (an epoll_wait per progress call) doubled the time of 8 ranks sharing 2 cores.
// One worker per process, driven by whichever stream worker waits on it. Every collective is
// tagged messages (kind, source rank, sequence), so calls match by order as NCCL's do.
//
// Faults: an operation that fails, or ZPP_TIMEOUT without completion, breaks the transport: what
// was in flight is cancelled, the call returns ncclRemoteError, and so does every later call at
// once (the endpoints use UCP_ERR_HANDLING_MODE_NONE, see Connect: a dead peer is found by the
// timeout).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/bootstrap.h"
#include "transport/transport.h"

namespace zpp::transport {

class UcpTransport final : public Transport {
 public:
  // Joins the job this process was launched into: the UCP context and worker, the address
  // exchange through zpp-launch, an endpoint to every other rank. `timeout` bounds every wait.
  static Result Create(const LaunchInfo& launch, std::chrono::milliseconds timeout,
                       std::unique_ptr<UcpTransport>* out);
  // The same in two steps, for a job that bootstraps some other way (torch.distributed's store):
  // Open makes the context and worker and gives this rank's worker address; Connect takes every
  // rank's, in rank order, once.
  enum class Reach { kOneMachine, kAnyMachine };
  static Result Open(int rank, int size, Reach reach, std::chrono::milliseconds timeout,
                     std::unique_ptr<UcpTransport>* out, Address* address);
  Result Connect(const std::vector<Address>& addresses);
  ~UcpTransport() override;  // flushes and closes the endpoints (bounded), then the worker
  UcpTransport(const UcpTransport&) = delete;
  UcpTransport& operator=(const UcpTransport&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  Result AllGather(int rank, const GroupView& group, uint64_t sequence, const void* send,
                   void* recv, size_t bytes) override;
  Result AllToAll(int rank, const GroupView& group, uint64_t sequence, const void* send, void* recv,
                  size_t bytes) override;
  Result Send(int rank, GroupKind kind, int to, uint64_t sequence, const void* send,
              size_t bytes) override;
  Result Recv(int rank, GroupKind kind, int from, uint64_t sequence, void* recv,
              size_t bytes) override;

 private:
  struct ContextDeleter {
    void operator()(ucp_context_h context) const { ucp_cleanup(context); }
  };
  struct WorkerDeleter {
    void operator()(ucp_worker_h worker) const { ucp_worker_destroy(worker); }
  };
  struct Peer {
    ucp_ep_h endpoint = nullptr;
  };
  // An operation in flight; request is nullptr once it has completed and been released.
  struct Pending {
    void* request = nullptr;
    size_t expected_bytes = 0;  // receives: the length the message must have
    bool is_receive = false;
  };

  UcpTransport(int rank, int size, std::chrono::milliseconds timeout);

  // The all-gather (every peer gets `send`) and the all-to-all (peer j gets piece j, pieces
  // `send_stride` apart) in one: receives posted first, then sends, then this rank's own piece.
  Result Exchange(int rank, const GroupView& group, uint64_t sequence, const void* send,
                  size_t send_stride, void* recv, size_t bytes, const char* what);
  // Under mutex_.
  Result PostSend(int to, ucp_tag_t tag, const void* data, size_t bytes,
                  std::vector<Pending>* pending);
  Result PostReceive(ucp_tag_t tag, void* data, size_t bytes, std::vector<Pending>* pending);
  Result Abort(const char* why);
  void Release(std::vector<Pending>* pending);
  void CloseEndpoints(std::chrono::milliseconds bound);

  // Drives the worker until every operation completed, a peer failed or the timeout passed.
  Result WaitAll(std::vector<Pending>* pending, const char* what);
  Result CheckUsable(int rank) const;

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // the worker is single-threaded (UCS_THREAD_MODE_SERIALIZED)
  std::unique_ptr<ucp_context, ContextDeleter> context_;
  std::unique_ptr<ucp_worker, WorkerDeleter> worker_;  // after context_: destroyed first
  std::vector<Peer> peers_;                            // by rank; ours has no endpoint
  std::atomic<int> broken_{ncclSuccess};
};

}  // namespace zpp::transport
