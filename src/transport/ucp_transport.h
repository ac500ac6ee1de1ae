// The transport between the processes of a zpp-launch job, over UCX's UCP tag API: shared
// memory between processes of one machine, TCP across machines (UCX picks; UCX_TLS overrides).
// A zpp-launch job is one machine by construction, so there TCP is left out: polling its idle
// sockets (an epoll_wait per progress call) doubled the time of 8 ranks sharing 2 cores.
// One worker per communicator, driven by whichever stream worker waits on it and, while none
// does, by the waits of the process's other communicators (ProgressOthers). Every collective is
// tagged messages (kind, source rank, sequence), so calls match by order as NCCL's do.
//
// Every tag also carries the communicator's call number and signature (CallLabel): messages of
// different calls never match, so mismatched calls cannot deliver each other's bytes.
//
// Faults break the transport: what was in flight is cancelled, the call fails, and so does every
// later call at once. A rank finds a fault while it waits (never on the fast path):
//   - a message from a peer in the same call number with another signature: the ranks called
//     different collectives (ncclInvalidUsage);
//   - a peer's process gone: on this machine, seen in the process table within kLivenessPeriod
//     (its endpoints use UCP_ERR_HANDLING_MODE_NONE, see Connect); on another machine, UCX's
//     endpoint error (ncclRemoteError);
//   - nothing for the timeout (ZPP_TIMEOUT, or torch's shorter one), after a WARN at a quarter
//     of it that names the ranks not yet heard from (ncclRemoteError).
// The rank that finds it tells every other rank (a note on a channel of its own), and each
// answers with the call it is in: within moments every rank fails, with one error that says what
// went wrong and which call each rank was in (Failure()).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/bootstrap.h"
#include "transport/process_identity.h"
#include "transport/transport.h"

namespace zpp::transport {

class UcpTransport final : public Transport {
 public:
  // Where the peers are taken to be: as the process table says, or each on another machine
  // (TCP, UCX's peer-failure mode, sends from the buffer): the path across machines, tested on
  // one.
  enum class Placement { kAsFound, kAllOnOtherMachines };
  // Joins the job this process was launched into: the UCP context and worker, the address
  // exchange through zpp-launch, an endpoint to every other rank. `timeout` bounds every wait.
  static Result Create(const LaunchInfo& launch, std::chrono::milliseconds timeout,
                       std::unique_ptr<UcpTransport>* out,
                       Placement placement = Placement::kAsFound);
  // The same in two steps, for a job that bootstraps some other way (torch.distributed's store):
  // Open makes the context and worker and gives this rank's worker address; Connect takes every
  // rank's, in rank order, once.
  enum class Reach { kOneMachine, kAnyMachine };
  static Result Open(int rank, int size, Reach reach, std::chrono::milliseconds timeout,
                     std::unique_ptr<UcpTransport>* out, Address* address);
  Result Connect(const std::vector<Address>& addresses, Placement placement = Placement::kAsFound);
  ~UcpTransport() override;  // flushes and closes the endpoints (bounded), then the worker
  UcpTransport(const UcpTransport&) = delete;
  UcpTransport& operator=(const UcpTransport&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Progresses the worker for `duration`, as a close does, for tests: what arrives then for a
  // failed call's operations must touch no caller's buffer.
  void ProgressForTesting(std::chrono::milliseconds duration);

  void BeginCall(const CallLabel& label) override;
  std::string Failure() const override;

  // Receives posted first, then sends, then this rank's own parts; every part of one message
  // under the same tag (UCX matches a sender's messages of one tag in the order they were sent).
  Result ExchangeParts(int rank, const GroupView& group, uint64_t sequence, size_t parts,
                       size_t bytes, const PartAt& send_at, const PartInto& recv_at,
                       const char* what) override;
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
    UcpTransport* owner = nullptr;
    int rank = 0;
    ucp_ep_h endpoint = nullptr;
    ProcessIdentity identity;
    bool same_machine = false;  // its process is in this one's process table
    // Messages with it go through a CallerBuffer: where shared memory or TCP carries them (see
    // Connect); else a failed call's operations end by a forced close.
    bool through_callbacks = false;
    ucs_status_t failed = UCS_OK;  // set by UCX's error handler (endpoints to other machines)
  };
  // The caller's buffer as UCX sees a message that shared memory or TCP carries
  // (ucp_transport.cc): UCX packs from it and unpacks into it through these callbacks, never
  // straight, so that a failed call can detach it (its sends pack zeros, its receives, which UCX
  // cannot cancel once matched, drop what still arrives) before the error returns and the caller
  // frees the buffer.
  struct CallerBuffer;
  static ucp_generic_dt_ops_t CallerBufferOps();
  // The CallerBuffer that UCX is to see `data` through (set in `param`) where `through`, else
  // nullptr (UCX uses `data` itself).
  CallerBuffer* ThroughCallbacks(bool through, const void* data, size_t bytes,
                                 ucp_request_param_t* param) const;
  // The transport is done with `buffer`: its operation `ended` (UCX will not touch it again), or
  // its call failed with the operation still in flight (detached, kept until the worker is gone);
  // nullptr: nothing to do. Under mutex_.
  void LetGo(CallerBuffer* buffer, bool ended);
  // Closes the endpoint to `peer` at once (peers on other machines: UCP_ERR_HANDLING_MODE_PEER),
  // ending its operations with UCS_ERR_CANCELED; the close's request, if it has one. Under
  // mutex_.
  void* ForceClose(int peer);
  // An operation in flight; request is nullptr once it has completed and been released.
  struct Pending {
    void* request = nullptr;
    size_t expected_bytes = 0;  // receives: the length the message must have
    bool is_receive = false;
    int peer = -1;
    CallerBuffer* buffer = nullptr;  // through_callbacks: let go (LetGo) when freed
  };
  struct Note;  // what a rank that found a fault tells the others (ucp_transport.cc)

  UcpTransport(int rank, int size, std::chrono::milliseconds timeout);

  // Under mutex_.
  Result PostSend(int to, ucp_tag_t tag, const void* data, size_t bytes,
                  std::vector<Pending>* pending);
  Result PostReceive(int from, ucp_tag_t tag, void* data, size_t bytes,
                     std::vector<Pending>* pending);
  // Breaks the transport with `result` for `reason` (what this rank found), tells every peer,
  // and gathers, briefly, the calls they are in into Failure(); `trigger` is the note that told
  // this rank, if one did. Under mutex_.
  Result Fail(Result result, const std::string& reason, const Note* trigger = nullptr);
  // While a wait is idle: a peer's note, a mismatched call, a peer gone. Under mutex_.
  Result LookForFaults(const std::vector<Pending>& pending, const char* what);
  bool TakeNote(Note* note);  // a note waiting from any peer; under mutex_
  void SendNote(int to, const Note& note);
  std::string CallInProgress() const;                              // "call 5, all_gather of ..."
  std::string RanksOf(const std::vector<Pending>& pending) const;  // not yet heard from
  // Send and Recv: checks, then `post` under mutex_, then the wait.
  Result PostOneAndWait(int rank, int peer, const char* what,
                        const std::function<Result(std::vector<Pending>*)>& post);
  // Ends a failed call's operations so that UCX holds none of the caller's buffers. Under mutex_.
  void Release(std::vector<Pending>* pending);
  // Progresses until every operation has ended, the deadline, or `quiet` with nothing to
  // progress; frees those that ended. Under mutex_.
  void AwaitBy(std::vector<Pending>* pending, Clock::time_point deadline,
               std::chrono::milliseconds quiet);
  void CloseEndpoints(std::chrono::milliseconds bound);

  // Frees the operations that have ended; what went wrong with one ("" if nothing), and in
  // `all_ended` whether none is left in progress. Under mutex_.
  std::string FreeEnded(std::vector<Pending>* pending, bool* all_ended);
  // Every kOthersPeriod of a wait: progresses every other connected transport of this process
  // that no wait is driving, until it has nothing to progress. UCX's TCP transport may hold
  // work for a worker after its calls completed, and a peer waiting on that communicator would
  // wait for this rank, busy on another, in turn (docs/architecture.md, "The same engine on CPU
  // processes"). Under mutex_.
  void ProgressOthers();
  // Drives the worker until every operation completed, a peer failed or the timeout passed;
  // counted in waits_ meanwhile.
  Result WaitAll(std::vector<Pending>* pending, const char* what);
  Result WaitFor(std::vector<Pending>* pending, const char* what);
  // Between two idle polls of WaitAll: spins, then yields, then sleeps on the worker's event
  // file descriptor until UCX has something to progress (at most kEventWaitMs), so that a wait on
  // a slow link costs no core (docs/architecture.md, "The same engine on CPU processes"). True
  // when it slept: WaitAll then skips the spin after later events.
  bool WaitForActivity(uint64_t idle_polls);
  Result CheckUsable(int rank) const;

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;  // the worker is single-threaded (UCS_THREAD_MODE_SERIALIZED)
  std::unique_ptr<ucp_context, ContextDeleter> context_;
  std::unique_ptr<ucp_worker, WorkerDeleter> worker_;  // after context_: destroyed first
  int event_fd_ = -1;  // the worker's (UCP_FEATURE_WAKEUP); -1: WaitForActivity sleeps instead
  std::vector<Peer> peers_;  // by rank; ours has no endpoint; never resized after Connect
  const ProcessIdentity self_ = ProcessIdentity::Self();
  CallLabel call_;  // under mutex_
  // Notes sent, under mutex_: UCX may pack one only when the peer has room, so each body lives
  // until the worker is gone.
  struct NoteSend {
    void* request = nullptr;  // nullptr: sent at once
    std::unique_ptr<Note> body;
  };
  std::vector<NoteSend> note_sends_;
  // Detached CallerBuffers whose operations were in flight (LetGo), under mutex_: a failed call's
  // only (every later call fails before it posts), freed after the worker.
  std::vector<std::unique_ptr<CallerBuffer>> detached_;
  Clock::time_point next_liveness_;  // under mutex_
  std::atomic<int> broken_{ncclSuccess};
  std::atomic<int> waits_{0};       // WaitAlls in progress: ProgressOthers leaves this worker alone
  ucp_datatype_t buffer_type_ = 0;  // CallerBuffer's generic datatype; destroyed after the worker
  mutable std::mutex failure_mutex_;  // a caller reads the failure while a wait may write it
  std::string failure_;
};

}  // namespace zpp::transport
