#include "transport/ucp_transport.h"

#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "transport/ucx_quiet_close.h"

namespace zpp::transport {
namespace {

// Tag: kind (3 bits) | point-to-point (1) | source rank (20) | call number (12) | call
// signature (12) | sequence (16). The call number and sequence wrap: what they tell apart is
// never that many calls (or operations of one group) apart while in flight.
constexpr int kRankBits = 20;
constexpr int kCallBits = 12;
constexpr int kSignatureBits = 12;
constexpr int kSequenceBits = 16;
constexpr int kSignatureShift = kSequenceBits;
constexpr int kCallShift = kSignatureShift + kSignatureBits;
constexpr int kRankShift = kCallShift + kCallBits;
static_assert(kRankShift + kRankBits == 60);
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
constexpr ucp_tag_t Bits(int count, int shift) { return ((ucp_tag_t{1} << count) - 1) << shift; }
constexpr ucp_tag_t kRankMask = Bits(kRankBits, kRankShift);
constexpr ucp_tag_t kCallMask = Bits(kCallBits, kCallShift);
constexpr ucp_tag_t kSignatureMask = Bits(kSignatureBits, kSignatureShift);
// The channel of the notes (after every group kind): kind bits all set, point to point.
constexpr ucp_tag_t kNoteTag = (ucp_tag_t{7} << 61) | (ucp_tag_t{1} << 60);
constexpr ucp_tag_t kNoteMask = Bits(4, 60);
static_assert(static_cast<int>(GroupKind::kInterRack) < 7);

ucp_tag_t Tag(GroupKind kind, bool point_to_point, int source, const CallLabel& call,
              uint64_t sequence) {
  return (static_cast<ucp_tag_t>(kind) << 61) | (static_cast<ucp_tag_t>(point_to_point) << 60) |
         (static_cast<ucp_tag_t>(source) << kRankShift) |
         ((static_cast<ucp_tag_t>(call.number) << kCallShift) & kCallMask) |
         ((static_cast<ucp_tag_t>(call.signature) << kSignatureShift) & kSignatureMask) |
         (sequence & Bits(kSequenceBits, 0));
}

// How long a rank that found a fault waits for the other ranks' notes (they answer from their
// own waits, within milliseconds; a rank computing between calls answers at its next call).
constexpr std::chrono::milliseconds kNoteWait(300);
// How often a waiting rank looks whether the peers it waits for still run.
constexpr std::chrono::milliseconds kLivenessPeriod(100);
// Idle polls between looks for a fault while a wait makes no progress, and the longest time
// between two looks while it does (a call whose messages cannot match keeps a worker busy with
// unexpected eager data, and a peer's note must still be read).
constexpr uint64_t kFaultLookPolls = 64;
constexpr std::chrono::milliseconds kFaultLookPeriod(5);
// How often a wait progresses the other communicators' idle workers (ProgressOthers): each look
// polls every one of them, and what it frees (a peer waiting on one) is rare at UCX's default
// socket buffers (bench/results/two_communicators_cpu.md).
constexpr std::chrono::milliseconds kOthersPeriod(50);

// How long the last operations of a healthy transport may take to drain at close.
constexpr std::chrono::milliseconds kCloseBound(5000);
// How long cancelled operations may take to finish after an abort.
constexpr std::chrono::milliseconds kCancelBound(1000);
// After a failed call, how long a worker with sends still in progress may have nothing to
// progress before they are detached (Release): a rendezvous send whose receive never comes.
constexpr std::chrono::milliseconds kSendsQuietBound(20);

// An RDMA device (InfiniBand, RoCE, iWARP) that UCX could use: /sys/class/infiniband not empty.
bool HasRdmaDevice() {
  std::error_code error;
  return std::filesystem::is_directory("/sys/class/infiniband", error) &&
         !std::filesystem::is_empty("/sys/class/infiniband", error);
}

// Between polls of an idle worker: spin briefly (the answer is usually microseconds away),
// then yield the core (several ranks share few cores), then sleep a little.
void Backoff(uint64_t idle_polls) {
  if (idle_polls < 64) return;
  if (idle_polls < 4096) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// WaitForActivity's longest sleep on the event descriptor: a bound, not a pace (an event ends it
// at once); it keeps the deadline, the fault look-out and another thread's posts in view.
constexpr int kEventWaitMs = 1;
constexpr uint64_t kSpinPolls = 16;   // then yield
constexpr uint64_t kYieldPolls = 64;  // then sleep on the event descriptor

void CopyText(const std::string& text, char* out, size_t bytes) {
  const size_t length = std::min(text.size(), bytes - 1);
  std::memcpy(out, text.data(), length);
  out[length] = '\0';
}

// Every open UcpTransport of this process (one per communicator), for ProgressOthers.
struct OpenTransports {
  std::mutex mutex;
  std::vector<UcpTransport*> all;
};
OpenTransports& ProcessTransports() {
  static OpenTransports* open = new OpenTransports;  // never destroyed: closes may come at exit
  return *open;
}

}  // namespace

struct UcpTransport::Note {
  static constexpr uint32_t kMagic = 0x7a70704e;  // "zppN"
  uint32_t magic = kMagic;
  int32_t rank = -1;
  int32_t result = ncclRemoteError;
  int32_t found = 0;      // 1: the sender found the fault itself; 0: it answers a note
  char reason[256] = {};  // what it found
  char call[256] = {};    // the call it is in
};

// Freed by the transport: when its operation has ended, else (detached with its operation in
// flight) once the worker is gone, as UCX's worker destroy ends such operations without finish.
struct UcpTransport::CallerBuffer {
  std::byte* data = nullptr;  // nullptr: detached (sends pack zeros, receives drop bytes)
  size_t bytes = 0;
};

void UcpTransport::LetGo(CallerBuffer* buffer, bool ended) {
  if (buffer == nullptr) return;  // an operation that used the caller's buffer, or a close
  if (ended) {
    delete buffer;
    return;
  }
  buffer->data = nullptr;  // UCX may go on: zeros out, bytes dropped, never the caller's memory
  detached_.emplace_back(buffer);
}

ucp_generic_dt_ops_t UcpTransport::CallerBufferOps() {
  ucp_generic_dt_ops_t ops{};
  ops.start_pack = [](void*, const void* buffer, size_t) { return const_cast<void*>(buffer); };
  ops.start_unpack = [](void*, void* buffer, size_t) { return buffer; };
  ops.packed_size = [](void* state) { return static_cast<CallerBuffer*>(state)->bytes; };
  ops.pack = [](void* state, size_t offset, void* dest, size_t max_length) {
    const auto* buffer = static_cast<const CallerBuffer*>(state);
    const size_t length = std::min(max_length, buffer->bytes - offset);
    if (buffer->data != nullptr) {
      std::memcpy(dest, buffer->data + offset, length);
    } else {
      std::memset(dest, 0, length);
    }
    return length;
  };
  ops.unpack = [](void* state, size_t offset, const void* src, size_t length) {
    const auto* buffer = static_cast<const CallerBuffer*>(state);
    if (offset > buffer->bytes || length > buffer->bytes - offset) {
      return UCS_ERR_MESSAGE_TRUNCATED;
    }
    if (buffer->data != nullptr) std::memcpy(buffer->data + offset, src, length);
    return UCS_OK;
  };
  ops.finish = [](void*) {};  // the transport frees it (LetGo), never UCX
  return ops;
}

UcpTransport::UcpTransport(int rank, int size, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout) {}

void UcpTransport::ProgressOthers() {
  std::unique_lock<std::mutex> open(ProcessTransports().mutex, std::try_to_lock);
  if (!open.owns_lock()) return;  // another wait is at it
  for (UcpTransport* other : ProcessTransports().all) {
    // One in a call is its own wait's to progress: taking its worker would hold that wait up.
    if (other == this || other->waits_.load() > 0) continue;
    std::unique_lock<std::mutex> lock(other->mutex_, std::try_to_lock);
    if (!lock.owns_lock() || !other->worker_) continue;  // in use: its own wait progresses it
    while (ucp_worker_progress(other->worker_.get()) != 0) {
    }
  }
}

Result UcpTransport::Create(const LaunchInfo& launch, std::chrono::milliseconds timeout,
                            std::unique_ptr<UcpTransport>* out, Placement placement) {
  std::unique_ptr<UcpTransport> transport;
  Address mine;
  // zpp-launch starts every rank on its own machine (the bootstrap listens on loopback).
  const bool as_found = placement == Placement::kAsFound;
  ZPP_CHECK(Open(launch.rank, launch.size, as_found ? Reach::kOneMachine : Reach::kAnyMachine,
                 timeout, &transport, &mine));
  std::vector<Address> all;
  ZPP_CHECK(ExchangeAddresses(launch, mine, Clock::now() + timeout, &all));
  ZPP_CHECK(transport->Connect(all, placement));
  *out = std::move(transport);
  return ncclSuccess;
}

namespace {

// zpp's defaults for UCX, each only where the user set no UCX_* variable for it.
void SetUcpDefaults(ucp_config_t* config, bool one_machine) {
  // cma (process_vm_readv/writev) treats a peer that died mid-transfer as a fatal error and
  // aborts the survivor: never what a fault-tolerant job wants. Every transport but cma (large
  // messages then go through shared memory buffers), and on one machine none but shared memory
  // and self.
  const char* transports = one_machine ? "^cma,tcp" : "^cma";
  if (std::getenv("UCX_TLS") == nullptr && ucp_config_modify(config, "TLS", transports) != UCS_OK) {
    ZPP_INFO(kInit, "UCP: cannot set transports %s; a peer dying mid-transfer may abort this one",
             transports);
  }
  // Where TCP is the network (no RDMA device on this machine), eager sends of every size: UCX's
  // rendezvous moved a large message across a 1000 Mbit/s link at about half its rate, eager at
  // its rate (bench/results/all_reduce_rndv_cpu_netbed_1000mbit.md). A message that arrives
  // before its receive is posted waits in UCX's memory, at most one collective's part per peer.
  // A failed call's sends still queued are detached before its error returns (Release).
  if (one_machine || std::getenv("UCX_RNDV_THRESH") != nullptr || HasRdmaDevice()) return;
  if (ucp_config_modify(config, "RNDV_THRESH", "inf") != UCS_OK) {
    ZPP_INFO(kInit, "UCP: cannot set RNDV_THRESH=inf; large messages use UCX's rendezvous");
  }
}

}  // namespace

Result UcpTransport::Open(int rank, int size, Reach reach, std::chrono::milliseconds timeout,
                          std::unique_ptr<UcpTransport>* out, Address* address_out) {
  ZPP_CHECK_ARG(size >= 1 && size <= (1 << kRankBits),
                "UCP transport: %d ranks, 1 to %d allowed; opening fails with ncclInvalidArgument",
                size, 1 << kRankBits);
  ZPP_CHECK_ARG(rank >= 0 && rank < size, "UCP transport: rank %d of %d" ZPP_BUG_REPORT, rank,
                size);
  std::unique_ptr<UcpTransport> transport(new UcpTransport(rank, size, timeout));
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) {
    ZPP_WARN(
        "UCP: cannot read the UCX configuration (UCX_* variables); the transport cannot open "
        "(ncclSystemError): check the UCX_* variables set");
    return ncclSystemError;
  }
  SetUcpDefaults(config, reach == Reach::kOneMachine);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.estimated_num_eps = static_cast<size_t>(size);
  ucp_context_h context = nullptr;
  const ucs_status_t init = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (init != UCS_OK) {
    ZPP_WARN(
        "UCP: ucp_init failed: %s; the transport cannot open (ncclSystemError): check UCX's "
        "installation and the UCX_* variables set",
        ucs_status_string(init));
    return ncclSystemError;
  }
  transport->context_.reset(context);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucp_worker_h worker = nullptr;
  const ucs_status_t created = ucp_worker_create(context, &worker_params, &worker);
  if (created != UCS_OK) {
    ZPP_WARN("UCP: ucp_worker_create failed: %s; the transport cannot open (ncclSystemError)",
             ucs_status_string(created));
    return ncclSystemError;
  }
  transport->worker_.reset(worker);
  static const ucp_generic_dt_ops_t kCallerBufferOps = CallerBufferOps();
  if (const ucs_status_t made =
          ucp_dt_create_generic(&kCallerBufferOps, nullptr, &transport->buffer_type_);
      made != UCS_OK) {
    ZPP_WARN("UCP: ucp_dt_create_generic failed: %s; the transport cannot open (ncclSystemError)",
             ucs_status_string(made));
    return ncclSystemError;
  }
  if (const ucs_status_t efd = ucp_worker_get_efd(worker, &transport->event_fd_); efd != UCS_OK) {
    transport->event_fd_ = -1;
    ZPP_INFO(kInit, "UCP: no event descriptor (%s): waits poll and sleep instead of blocking",
             ucs_status_string(efd));
  }

  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  const ucs_status_t got = ucp_worker_get_address(worker, &address, &address_bytes);
  if (got != UCS_OK) {
    ZPP_WARN("UCP: ucp_worker_get_address failed: %s; the transport cannot open (ncclSystemError)",
             ucs_status_string(got));
    return ncclSystemError;
  }
  // The address the others need: who this process is, then how UCX reaches it.
  address_out->assign(kIdentityBytes, std::byte{0});
  WriteIdentity(transport->self_, address_out->data());
  const auto* first = reinterpret_cast<const std::byte*>(address);
  address_out->insert(address_out->end(), first, first + address_bytes);
  ucp_worker_release_address(worker, address);

  *out = std::move(transport);
  return ncclSuccess;
}

Result UcpTransport::Connect(const std::vector<Address>& addresses, Placement placement) {
  ZPP_CHECK_ARG(static_cast<int>(addresses.size()) == size_,
                "UCP transport: %zu addresses for %d ranks" ZPP_BUG_REPORT, addresses.size(),
                size_);
  std::unique_lock<std::mutex> lock(mutex_);
  ZPP_CHECK_ARG(peers_.empty(),
                "UCP transport of rank %d: connected twice; connecting fails with "
                "ncclInvalidArgument (after a failed zppCpuCommConnect, open a new communicator)",
                rank_);
  peers_.resize(size_);
  // With RDMA, a rendezvous moves a message straight between the callers' buffers, and a failed
  // call's operations end by a forced close of their endpoints (Release). Shared memory and TCP
  // copy the bytes anyway, so there they go through a CallerBuffer that Release can detach: an
  // endpoint on this machine cannot be force-closed (no peer-failure mode), and one over TCP
  // crashed UCX 1.13 when the peer's bytes came after it
  // (MultiProcessTest.FailedReceiveFromAnotherMachineIsNotWrittenAfterTheError).
  const bool rdma = HasRdmaDevice();
  for (int r = 0; r < size_; ++r) {
    Peer& peer = peers_[r];
    peer.owner = this;
    peer.rank = r;
    if (r == rank_) {
      peer.identity = self_;
      continue;
    }
    if (!ReadIdentity(addresses[r].data(), addresses[r].size(), &peer.identity)) {
      ZPP_WARN(
          "UCP: rank %d's address is not a zpp transport address (a different zpp build?); "
          "connecting fails with ncclInvalidUsage (pass every rank's zppCpuCommAddress bytes "
          "unchanged, all from one zpp build)",
          r);
      return ncclInvalidUsage;
    }
    peer.same_machine = placement == Placement::kAsFound && self_.SharesProcessTable(peer.identity);
    peer.through_callbacks = peer.same_machine || !rdma;
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses[r].data() + kIdentityBytes);
    if (peer.same_machine) {
      // UCP_ERR_HANDLING_MODE_NONE: with PEER, UCX 1.13 drops its shared-memory transports (they
      // have no peer-failure handler) and goes over TCP, twice as slow here. The process table
      // tells when such a peer dies (LookForFaults).
      params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    } else {
      // Another machine: TCP (or a network), where UCX itself reports a peer gone.
      params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      params.err_handler.cb = [](void* arg, ucp_ep_h, ucs_status_t status) {
        static_cast<Peer*>(arg)->failed = status;  // called inside ucp_worker_progress
      };
      params.err_handler.arg = &peer;
    }
    const ucs_status_t status = ucp_ep_create(worker_.get(), &params, &peer.endpoint);
    if (status != UCS_OK) {
      ZPP_WARN(
          "UCP: cannot create an endpoint to rank %d: %s; connecting fails with ncclSystemError "
          "(is that rank's machine reachable? UCX_TLS chooses UCX's transports)",
          r, ucs_status_string(status));
      return ncclSystemError;
    }
  }
  lock.unlock();  // never waits for the list while holding mutex_ (ProgressOthers: the reverse)
  {
    std::lock_guard<std::mutex> open(ProcessTransports().mutex);
    ProcessTransports().all.push_back(this);
  }
  ZPP_INFO(kInit, "UCP transport: rank %d of %d connected", rank_, size_);
  return ncclSuccess;
}

UcpTransport::~UcpTransport() {
  {
    std::lock_guard<std::mutex> open(ProcessTransports().mutex);
    std::erase(ProcessTransports().all, this);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!worker_) return;
  const bool healthy = broken_.load() == ncclSuccess;
  // Healthy: flush, so that the last messages reach ranks still receiving them; a peer that
  // closed first (it completed every call too) fails the flush, which UCX would print as an
  // ERROR at the end of a good job. Broken: a peer may be gone and never answer the flush; the
  // bound is short, the worker ends the rest, and UCX says what it found.
  QuietCloseScope quiet(healthy);
  CloseEndpoints(healthy ? kCloseBound : kCancelBound);
  for (const NoteSend& sent : note_sends_) {
    if (sent.request != nullptr) ucp_request_free(sent.request);
  }
  worker_.reset();  // within the scope: the worker ends the closes still pending
  note_sends_.clear();
  detached_.clear();
  if (buffer_type_ != 0) ucp_dt_destroy(buffer_type_);  // after the worker: its operations ended
  const QuietCloseScope::Counts& counts = quiet.counts();
  if (counts.flush_errors + counts.left_unreceived > 0) {
    ZPP_INFO(kInit,
             "UCP: rank %d closed; UCX's messages not printed: %d flush(es) that found a peer "
             "already closed (it left first, after its last call), %d buffer(s) of messages no "
             "call received (a failed call's)",
             rank_, counts.flush_errors, counts.left_unreceived);
  }
}

void UcpTransport::CloseEndpoints(std::chrono::milliseconds bound) {
  std::vector<void*> closing;
  for (Peer& peer : peers_) {
    if (peer.endpoint == nullptr) continue;
    if (peer.failed != UCS_OK) {  // UCX requires a forced close of an endpoint whose peer failed
      if (void* request = ForceClose(peer.rank); request != nullptr) closing.push_back(request);
      continue;
    }
    ucp_request_param_t param{};
    void* request = ucp_ep_close_nbx(peer.endpoint, &param);
    peer.endpoint = nullptr;
    if (request != nullptr && !UCS_PTR_IS_ERR(request)) closing.push_back(request);
  }
  const Clock::time_point deadline = Clock::now() + bound;
  uint64_t idle = 0;
  while (!closing.empty()) {
    if (ucp_worker_progress(worker_.get()) != 0) idle = 0;
    for (size_t i = 0; i < closing.size();) {
      if (ucp_request_check_status(closing[i]) == UCS_INPROGRESS) {
        ++i;
        continue;
      }
      ucp_request_free(closing[i]);
      closing[i] = closing.back();
      closing.pop_back();
    }
    if (Clock::now() >= deadline) {
      // A peer that never answers: give the requests back; UCX ends them with the worker.
      ZPP_INFO(kInit, "UCP: %zu endpoint(s) did not close in time", closing.size());
      for (void* request : closing) ucp_request_free(request);
      break;
    }
    Backoff(idle++);
  }
}

void UcpTransport::ProgressForTesting(std::chrono::milliseconds duration) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point end = Clock::now() + duration;
  while (Clock::now() < end) ucp_worker_progress(worker_.get());
}

void UcpTransport::BeginCall(const CallLabel& label) {
  std::lock_guard<std::mutex> lock(mutex_);
  call_ = label;
}

std::string UcpTransport::Failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

std::string UcpTransport::CallInProgress() const {
  return "call " + std::to_string(call_.number) + ", " + call_.description;
}

Result UcpTransport::CheckUsable(int rank) const {
  const int broken = broken_.load();
  if (broken != ncclSuccess) return static_cast<Result>(broken);
  ZPP_CHECK_ARG(rank == rank_, "UCP transport of rank %d called as rank %d" ZPP_BUG_REPORT, rank_,
                rank);
  return ncclSuccess;
}

UcpTransport::CallerBuffer* UcpTransport::ThroughCallbacks(bool through, const void* data,
                                                           size_t bytes,
                                                           ucp_request_param_t* param) const {
  if (!through) return nullptr;
  param->op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  param->datatype = buffer_type_;
  return new CallerBuffer{static_cast<std::byte*>(const_cast<void*>(data)), bytes};
}

Result UcpTransport::PostSend(int to, ucp_tag_t tag, const void* data, size_t bytes,
                              std::vector<Pending>* pending) {
  ucp_request_param_t param{};
  CallerBuffer* buffer = ThroughCallbacks(peers_[to].through_callbacks, data, bytes, &param);
  void* request = buffer != nullptr
                      ? ucp_tag_send_nbx(peers_[to].endpoint, buffer, 1, tag, &param)
                      : ucp_tag_send_nbx(peers_[to].endpoint, data, bytes, tag, &param);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) LetGo(buffer, true);
  if (UCS_PTR_IS_ERR(request)) {
    return Fail(ncclRemoteError, "a send to rank " + std::to_string(to) +
                                     " failed: " + ucs_status_string(UCS_PTR_STATUS(request)));
  }
  if (request != nullptr) pending->push_back({request, 0, false, to, buffer});
  return ncclSuccess;
}

Result UcpTransport::PostReceive(int from, ucp_tag_t tag, void* data, size_t bytes,
                                 std::vector<Pending>* pending) {
  ucp_request_param_t param{};
  CallerBuffer* buffer = ThroughCallbacks(peers_[from].through_callbacks, data, bytes, &param);
  void* request = buffer != nullptr
                      ? ucp_tag_recv_nbx(worker_.get(), buffer, 1, tag, kFullMask, &param)
                      : ucp_tag_recv_nbx(worker_.get(), data, bytes, tag, kFullMask, &param);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) LetGo(buffer, true);
  if (UCS_PTR_IS_ERR(request)) {
    return Fail(ncclRemoteError, "a receive from rank " + std::to_string(from) +
                                     " failed: " + ucs_status_string(UCS_PTR_STATUS(request)));
  }
  if (request != nullptr) pending->push_back({request, bytes, true, from, buffer});
  return ncclSuccess;
}

Result UcpTransport::Fail(Result result, const std::string& reason, const Note* trigger) {
  int expected = ncclSuccess;
  if (!broken_.compare_exchange_strong(expected, result)) return static_cast<Result>(expected);
  // Everyone hears of it, with the call this rank is in; they answer with theirs.
  Note mine;
  mine.rank = rank_;
  mine.result = result;
  mine.found = 1;
  CopyText(reason, mine.reason, sizeof(mine.reason));
  CopyText(CallInProgress(), mine.call, sizeof(mine.call));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) SendNote(peer, mine);
  }
  std::vector<std::string> calls(size_);
  calls[rank_] = mine.call;
  int heard = 1;
  if (trigger != nullptr) {
    calls[trigger->rank] = trigger->call;
    ++heard;
  }
  const Clock::time_point deadline = Clock::now() + kNoteWait;
  uint64_t idle = 0;
  while (heard < size_ && Clock::now() < deadline) {
    Note note;
    if (TakeNote(&note)) {
      if (calls[note.rank].empty()) ++heard;
      calls[note.rank] = note.call;
      idle = 0;
      continue;
    }
    if (ucp_worker_progress(worker_.get()) != 0) idle = 0;
    Backoff(idle++);
  }
  std::string text = "rank " + std::to_string(rank_) + ": " + reason + ". Calls in progress:";
  for (int peer = 0; peer < size_; ++peer) {
    text += " rank " + std::to_string(peer) + " (" + peers_[peer].identity.Describe() +
            "): " + (calls[peer].empty() ? std::string("no answer") : calls[peer]) + ";";
  }
  text.back() = '.';
  ZPP_WARN("%s This communicator fails from now on (%s): destroy it and open a new one to go on.",
           text.c_str(), ResultName(result));
  std::lock_guard<std::mutex> lock(failure_mutex_);
  failure_ = std::move(text);
  return result;
}

void UcpTransport::SendNote(int to, const Note& note) {
  if (peers_[to].endpoint == nullptr || peers_[to].failed != UCS_OK) return;
  ucp_request_param_t param{};
  NoteSend sent{nullptr, std::make_unique<Note>(note)};
  sent.request = ucp_tag_send_nbx(peers_[to].endpoint, sent.body.get(), sizeof(note),
                                  kNoteTag | (static_cast<ucp_tag_t>(rank_) << kRankShift), &param);
  if (UCS_PTR_IS_ERR(sent.request)) sent.request = nullptr;
  note_sends_.push_back(std::move(sent));
}

bool UcpTransport::TakeNote(Note* note) {
  ucp_tag_recv_info_t info{};
  ucp_tag_message_h message = ucp_tag_probe_nb(worker_.get(), kNoteTag, kNoteMask, 1, &info);
  if (message == nullptr) return false;
  ucp_request_param_t param{};
  void* request = ucp_tag_msg_recv_nbx(worker_.get(), note, sizeof(*note), message, &param);
  if (UCS_PTR_IS_ERR(request)) return false;
  if (request != nullptr) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker_.get());
    ucp_request_free(request);
  }
  note->reason[sizeof(note->reason) - 1] = '\0';
  note->call[sizeof(note->call) - 1] = '\0';
  return info.length == sizeof(*note) && note->magic == Note::kMagic && note->rank >= 0 &&
         note->rank < size_ && note->rank != rank_;
}

std::string UcpTransport::RanksOf(const std::vector<Pending>& pending) const {
  std::vector<bool> waiting(size_);
  bool receives = false;
  for (const Pending& p : pending) receives |= p.request != nullptr && p.is_receive;
  for (const Pending& p : pending) {
    if (p.request != nullptr && p.is_receive == receives && p.peer >= 0) waiting[p.peer] = true;
  }
  std::string ranks;
  for (int peer = 0; peer < size_; ++peer) {
    if (!waiting[peer]) continue;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer) + " (" +
             peers_[peer].identity.Describe() + ")";
  }
  return (receives ? "nothing yet from rank(s) " : "rank(s) not yet taking this rank's data: ") +
         ranks;
}

Result UcpTransport::LookForFaults(const std::vector<Pending>& pending, const char* what) {
  Note note;
  if (TakeNote(&note)) {
    // Fail's own note answers the finder, who is collecting the calls in progress.
    return Fail(static_cast<Result>(note.result),
                "rank " + std::to_string(note.rank) + " reported: " + note.reason, &note);
  }
  const Clock::time_point now = Clock::now();
  const bool look_at_processes = now >= next_liveness_;
  if (look_at_processes) next_liveness_ = now + kLivenessPeriod;
  for (const Pending& p : pending) {
    if (p.request == nullptr || p.peer < 0) continue;
    const Peer& peer = peers_[p.peer];
    if (p.is_receive) {
      // A message from this peer in this call that cannot match: the peer is in another call.
      ucp_tag_recv_info_t info{};
      const ucp_tag_t tag = Tag(GroupKind::kWorld, false, p.peer, call_, 0);
      if (ucp_tag_probe_nb(worker_.get(), tag, kRankMask | kCallMask, 0, &info) != nullptr &&
          (info.sender_tag & kSignatureMask) != (tag & kSignatureMask) &&
          (info.sender_tag & kNoteMask) != kNoteTag) {
        return Fail(ncclInvalidUsage, "mismatched calls: rank " + std::to_string(p.peer) +
                                          "'s message in call " + std::to_string(call_.number) +
                                          " is of another collective, count or dtype than rank " +
                                          std::to_string(rank_) + "'s (" + what + ")");
      }
    }
    if (peer.failed != UCS_OK) {
      return Fail(ncclRemoteError, "rank " + std::to_string(p.peer) + " (" +
                                       peer.identity.Describe() + ") is gone: UCX reports " +
                                       ucs_status_string(peer.failed));
    }
    if (look_at_processes && peer.same_machine && peer.identity.Gone()) {
      return Fail(ncclRemoteError, "rank " + std::to_string(p.peer) + " (" +
                                       peer.identity.Describe() + ") is gone: its process exited");
    }
  }
  return ncclSuccess;
}

void UcpTransport::Release(std::vector<Pending>* pending) {
  // Before the error reaches the caller, UCX must let go of its buffers: the caller may free
  // them at once. Unmatched receives are cancelled. A send cannot be (UCX 1.13), nor a receive
  // already matched, and UCX goes on with them whenever the worker progresses next, maybe in the
  // close: sends finish while the worker has data to move (this rank's notes follow them); then
  // what is still in progress ends unread and unwritten: through a CallerBuffer (see Connect),
  // by detaching it; else by a forced close of the endpoint (UCS_ERR_CANCELED).
  for (Pending& p : *pending) {
    if (p.request != nullptr && p.is_receive) ucp_request_cancel(worker_.get(), p.request);
  }
  AwaitBy(pending, Clock::now() + kCancelBound, kSendsQuietBound);
  std::vector<Pending> closing;
  for (Pending& p : *pending) {
    if (p.request == nullptr) continue;
    if (p.buffer != nullptr) {
      ucp_request_free(p.request);  // UCX ends it later, or with the worker
      p.request = nullptr;
      LetGo(p.buffer, false);
    } else if (void* close = ForceClose(p.peer); close != nullptr) {
      closing.push_back({close, 0, false, -1, nullptr});
    }
  }
  // A receive whose endpoint was closed may never end: only the closes are awaited.
  AwaitBy(&closing, Clock::now() + kCancelBound, kCancelBound);
  for (const std::vector<Pending>* left : {pending, &closing}) {
    for (const Pending& p : *left) {
      if (p.request != nullptr) ucp_request_free(p.request);
    }
  }
  pending->clear();
}

void* UcpTransport::ForceClose(int peer) {
  if (peers_[peer].endpoint == nullptr) return nullptr;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* request = ucp_ep_close_nbx(peers_[peer].endpoint, &param);
  peers_[peer].endpoint = nullptr;
  return request != nullptr && !UCS_PTR_IS_ERR(request) ? request : nullptr;
}

void UcpTransport::AwaitBy(std::vector<Pending>* pending, Clock::time_point deadline,
                           std::chrono::milliseconds quiet) {
  uint64_t idle = 0;
  Clock::time_point active = Clock::now();
  for (;;) {
    bool in_progress = false;
    for (Pending& p : *pending) {
      if (p.request == nullptr) continue;
      if (ucp_request_check_status(p.request) == UCS_INPROGRESS) {
        in_progress = true;
        continue;
      }
      ucp_request_free(p.request);
      p.request = nullptr;
      LetGo(p.buffer, true);
    }
    const Clock::time_point now = Clock::now();
    if (!in_progress || now >= deadline || now - active >= quiet) return;
    if (ucp_worker_progress(worker_.get()) != 0) {
      idle = 0;
      active = now;
    }
    Backoff(idle++);
  }
}

std::string UcpTransport::FreeEnded(std::vector<Pending>* pending, bool* all_ended) {
  *all_ended = true;
  std::string failed;
  for (Pending& p : *pending) {
    if (p.request == nullptr) continue;
    const ucs_status_t status = ucp_request_check_status(p.request);
    if (status == UCS_INPROGRESS) {
      *all_ended = false;
      continue;
    }
    if (status == UCS_OK && p.is_receive) {
      ucp_tag_recv_info_t info{};
      if (ucp_tag_recv_request_test(p.request, &info) == UCS_OK &&
          info.length != p.expected_bytes) {
        failed = "a message of " + std::to_string(info.length) + " bytes from rank " +
                 std::to_string(p.peer) + " where " + std::to_string(p.expected_bytes) +
                 " were expected";
      }
    } else if (status != UCS_OK) {
      failed = std::string("an operation with rank ") + std::to_string(p.peer) +
               " failed: " + ucs_status_string(status);
    }
    ucp_request_free(p.request);
    p.request = nullptr;
    LetGo(p.buffer, true);
  }
  return failed;
}

Result UcpTransport::WaitAll(std::vector<Pending>* pending, const char* what) {
  ++waits_;
  const Result result = WaitFor(pending, what);
  --waits_;
  return result;
}

Result UcpTransport::WaitFor(std::vector<Pending>* pending, const char* what) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + timeout_;
  const Clock::time_point warn_at = start + timeout_ / 4;
  bool warned = false;
  // Once this wait has slept on the descriptor, its answer is not microseconds away (a long
  // transfer trickling in over a slow link): each later event goes straight back to sleep
  // instead of spinning and yielding again, which cost CPU per event that ranks sharing few
  // cores need for their compute.
  bool slept = false;
  uint64_t idle = 0;
  Clock::time_point next_look = start + kFaultLookPeriod;
  Clock::time_point next_others = start + kOthersPeriod;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (broken_.load() != ncclSuccess) {
        Release(pending);
        return static_cast<Result>(broken_.load());
      }
      while (ucp_worker_progress(worker_.get()) != 0) idle = slept ? kYieldPolls : 0;
      bool done = false;
      const std::string failed = FreeEnded(pending, &done);
      if (!failed.empty()) {
        const Result result = Fail(ncclRemoteError, std::string(what) + ": " + failed);
        Release(pending);
        return result;
      }
      if (done) {
        pending->clear();
        return ncclSuccess;
      }
      const Clock::time_point now = Clock::now();
      if ((idle >= kFaultLookPolls && idle % kFaultLookPolls == 0) || now >= next_look) {
        next_look = now + kFaultLookPeriod;
        if (now >= next_others) {
          next_others = now + kOthersPeriod;
          ProgressOthers();
        }
        if (Result found = LookForFaults(*pending, what); found != ncclSuccess) {
          Release(pending);
          return found;
        }
      }
      if (!warned && now >= warn_at) {
        warned = true;
        ZPP_WARN(
            "rank %d: %s of %s: %s after %.0f s; the error comes at %.0f s (ZPP_TIMEOUT, or "
            "init_process_group's timeout when shorter: raise it if those ranks are only slow)",
            rank_, what, CallInProgress().c_str(), RanksOf(*pending).c_str(),
            std::chrono::duration<double>(now - start).count(),
            std::chrono::duration<double>(timeout_).count());
      }
      if (now >= deadline) {
        const Result result = Fail(
            ncclRemoteError, std::string(what) + ": " + RanksOf(*pending) +
                                 " within the timeout (" + std::to_string(timeout_.count()) +
                                 " ms: ZPP_TIMEOUT, or init_process_group's timeout when shorter)");
        Release(pending);
        return result;
      }
    }
    slept = WaitForActivity(idle++) || slept;
  }
}

bool UcpTransport::WaitForActivity(uint64_t idle_polls) {
  if (idle_polls < kSpinPolls) return false;
  if (idle_polls < kYieldPolls) {
    sched_yield();
    return false;
  }
  ucs_status_t armed = UCS_ERR_NO_RESOURCE;
  if (event_fd_ >= 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    armed = ucp_worker_arm(worker_.get());
  }
  // Not armed (UCS_ERR_BUSY: events arrived since the last progress, or shared memory's sends
  // wait for room; no descriptor): the back-off's yields and short sleeps instead.
  if (armed != UCS_OK) {
    Backoff(idle_polls);
    return false;
  }
  pollfd descriptor{event_fd_, POLLIN, 0};
  poll(&descriptor, 1, kEventWaitMs);
  return true;
}

Result UcpTransport::ExchangeParts(int rank, const GroupView& group, uint64_t sequence,
                                   size_t parts, size_t bytes, const PartAt& send_at,
                                   const PartInto& recv_at, const char* what) {
  ZPP_CHECK(CheckUsable(rank));
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (bool sending : {false, true}) {
      for (size_t i = 0; i < group.members.size(); ++i) {
        const int member = group.members[i];
        if (member == rank_) continue;
        const ucp_tag_t tag = Tag(group.kind, false, sending ? rank_ : member, call_, sequence);
        for (size_t part = 0; part < parts; ++part) {
          const Result r = sending ? PostSend(member, tag, send_at(i, part), bytes, &pending)
                                   : PostReceive(member, tag, recv_at(i, part), bytes, &pending);
          if (r != ncclSuccess) {
            Release(&pending);
            return r;
          }
        }
      }
    }
  }
  const auto me = static_cast<size_t>(group.my_index);
  for (size_t part = 0; part < parts; ++part) {
    std::byte* into = recv_at(me, part);
    const std::byte* from = send_at(me, part);
    if (into != nullptr && into != from) std::memmove(into, from, bytes);
  }
  return WaitAll(&pending, what);
}

Result UcpTransport::Send(int rank, GroupKind kind, int to, uint64_t sequence, const void* send,
                          size_t bytes) {
  return PostOneAndWait(rank, to, "send", [&](std::vector<Pending>* pending) {
    return PostSend(to, Tag(kind, true, rank_, call_, sequence), send, bytes, pending);
  });
}

Result UcpTransport::Recv(int rank, GroupKind kind, int from, uint64_t sequence, void* recv,
                          size_t bytes) {
  return PostOneAndWait(rank, from, "receive", [&](std::vector<Pending>* pending) {
    return PostReceive(from, Tag(kind, true, from, call_, sequence), recv, bytes, pending);
  });
}

Result UcpTransport::PostOneAndWait(int rank, int peer, const char* what,
                                    const std::function<Result(std::vector<Pending>*)>& post) {
  ZPP_CHECK(CheckUsable(rank));
  ZPP_CHECK_ARG(peer >= 0 && peer < size_ && peer != rank_,
                "UCP %s between rank %d and rank %d" ZPP_BUG_REPORT, what, rank_, peer);
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ZPP_CHECK(post(&pending));
  }
  return WaitAll(&pending, what);
}

}  // namespace zpp::transport
