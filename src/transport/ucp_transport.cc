#include "transport/ucp_transport.h"

#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <thread>

namespace zpp::transport {
namespace {

// Tag: kind (3 bits) | point-to-point (1) | source rank (20) | sequence (40).
constexpr int kRankBits = 20;
constexpr int kSequenceBits = 40;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

ucp_tag_t Tag(GroupKind kind, bool point_to_point, int source, uint64_t sequence) {
  return (static_cast<ucp_tag_t>(kind) << 61) | (static_cast<ucp_tag_t>(point_to_point) << 60) |
         (static_cast<ucp_tag_t>(source) << kSequenceBits) |
         (sequence & ((ucp_tag_t{1} << kSequenceBits) - 1));
}

// How long the last operations of a healthy transport may take to drain at close.
constexpr std::chrono::milliseconds kCloseBound(5000);
// How long cancelled operations may take to finish after an abort.
constexpr std::chrono::milliseconds kCancelBound(1000);

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

}  // namespace

UcpTransport::UcpTransport(int rank, int size, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout) {}

Result UcpTransport::Create(const LaunchInfo& launch, std::chrono::milliseconds timeout,
                            std::unique_ptr<UcpTransport>* out) {
  std::unique_ptr<UcpTransport> transport;
  Address mine;
  // zpp-launch starts every rank on its own machine (the bootstrap listens on loopback).
  ZPP_CHECK(Open(launch.rank, launch.size, Reach::kOneMachine, timeout, &transport, &mine));
  std::vector<Address> all;
  ZPP_CHECK(ExchangeAddresses(launch, mine, Clock::now() + timeout, &all));
  ZPP_CHECK(transport->Connect(all));
  *out = std::move(transport);
  return ncclSuccess;
}

Result UcpTransport::Open(int rank, int size, Reach reach, std::chrono::milliseconds timeout,
                          std::unique_ptr<UcpTransport>* out, Address* address_out) {
  ZPP_CHECK_ARG(size >= 1 && size <= (1 << kRankBits), "UCP transport: %d ranks, 1 to %d", size,
                1 << kRankBits);
  ZPP_CHECK_ARG(rank >= 0 && rank < size, "UCP transport: rank %d of %d", rank, size);
  std::unique_ptr<UcpTransport> transport(new UcpTransport(rank, size, timeout));
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) {
    ZPP_WARN("UCP: cannot read the UCX configuration (UCX_* variables)");
    return ncclSystemError;
  }
  // cma (process_vm_readv/writev) treats a peer that died mid-transfer as a fatal error and
  // aborts the survivor: never what a fault-tolerant job wants. Unless UCX_TLS says otherwise,
  // every transport but cma (large messages then go through shared memory buffers), and on one
  // machine none but shared memory and self.
  const char* transports = reach == Reach::kOneMachine ? "^cma,tcp" : "^cma";
  if (std::getenv("UCX_TLS") == nullptr && ucp_config_modify(config, "TLS", transports) != UCS_OK) {
    ZPP_INFO(kInit, "UCP: cannot set transports %s; a peer dying mid-transfer may abort this one",
             transports);
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_TAG;
  params.estimated_num_eps = static_cast<size_t>(size);
  ucp_context_h context = nullptr;
  const ucs_status_t init = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (init != UCS_OK) {
    ZPP_WARN("UCP: ucp_init failed: %s", ucs_status_string(init));
    return ncclSystemError;
  }
  transport->context_.reset(context);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucp_worker_h worker = nullptr;
  const ucs_status_t created = ucp_worker_create(context, &worker_params, &worker);
  if (created != UCS_OK) {
    ZPP_WARN("UCP: ucp_worker_create failed: %s", ucs_status_string(created));
    return ncclSystemError;
  }
  transport->worker_.reset(worker);

  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  const ucs_status_t got = ucp_worker_get_address(worker, &address, &address_bytes);
  if (got != UCS_OK) {
    ZPP_WARN("UCP: ucp_worker_get_address failed: %s", ucs_status_string(got));
    return ncclSystemError;
  }
  const auto* first = reinterpret_cast<const std::byte*>(address);
  address_out->assign(first, first + address_bytes);
  ucp_worker_release_address(worker, address);

  *out = std::move(transport);
  return ncclSuccess;
}

Result UcpTransport::Connect(const std::vector<Address>& addresses) {
  ZPP_CHECK_ARG(static_cast<int>(addresses.size()) == size_,
                "UCP transport: %zu addresses for %d ranks", addresses.size(), size_);
  std::lock_guard<std::mutex> lock(mutex_);
  ZPP_CHECK_ARG(peers_.empty(), "UCP transport of rank %d: connected twice", rank_);
  peers_.resize(size_);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    ucp_ep_params_t params{};
    // UCP_ERR_HANDLING_MODE_NONE: with PEER, UCX 1.13 drops its shared-memory transports (they
    // have no peer-failure handler) and goes over TCP, twice as slow here. A dead peer is then
    // found by the timeout alone, which bounds every wait anyway.
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses[r].data());
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    const ucs_status_t status = ucp_ep_create(worker_.get(), &params, &peers_[r].endpoint);
    if (status != UCS_OK) {
      ZPP_WARN("UCP: cannot create an endpoint to rank %d: %s", r, ucs_status_string(status));
      return ncclSystemError;
    }
  }
  ZPP_INFO(kInit, "UCP transport: rank %d of %d connected", rank_, size_);
  return ncclSuccess;
}

UcpTransport::~UcpTransport() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!worker_) return;
  // Healthy: flush, so that the last messages reach ranks still receiving them. Broken: a peer
  // may be gone and never answer the flush; the bound is short, and the worker ends the rest.
  CloseEndpoints(broken_.load() == ncclSuccess ? kCloseBound : kCancelBound);
}

void UcpTransport::CloseEndpoints(std::chrono::milliseconds bound) {
  std::vector<void*> closing;
  for (Peer& peer : peers_) {
    if (peer.endpoint == nullptr) continue;
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

Result UcpTransport::CheckUsable(int rank) const {
  const int broken = broken_.load();
  if (broken != ncclSuccess) return static_cast<Result>(broken);
  ZPP_CHECK_ARG(rank == rank_, "UCP transport of rank %d called as rank %d", rank_, rank);
  return ncclSuccess;
}

Result UcpTransport::PostSend(int to, ucp_tag_t tag, const void* data, size_t bytes,
                              std::vector<Pending>* pending) {
  ucp_request_param_t param{};
  void* request = ucp_tag_send_nbx(peers_[to].endpoint, data, bytes, tag, &param);
  if (UCS_PTR_IS_ERR(request)) {
    ZPP_WARN("UCP: send to rank %d failed: %s", to, ucs_status_string(UCS_PTR_STATUS(request)));
    return Abort("a send failed");
  }
  if (request != nullptr) pending->push_back({request, 0, false});
  return ncclSuccess;
}

Result UcpTransport::PostReceive(ucp_tag_t tag, void* data, size_t bytes,
                                 std::vector<Pending>* pending) {
  ucp_request_param_t param{};
  void* request = ucp_tag_recv_nbx(worker_.get(), data, bytes, tag, kFullMask, &param);
  if (UCS_PTR_IS_ERR(request)) {
    ZPP_WARN("UCP: receive failed: %s", ucs_status_string(UCS_PTR_STATUS(request)));
    return Abort("a receive failed");
  }
  if (request != nullptr) pending->push_back({request, bytes, true});
  return ncclSuccess;
}

Result UcpTransport::Abort(const char* why) {
  int expected = ncclSuccess;
  if (broken_.compare_exchange_strong(expected, ncclRemoteError)) {
    ZPP_WARN("rank %d: %s; this job's collectives fail from now on with ncclRemoteError", rank_,
             why);
  }
  return ncclRemoteError;
}

void UcpTransport::Release(std::vector<Pending>* pending) {
  // Receives are cancelled and awaited (briefly): UCX must not write into buffers the caller
  // may free once the error is out. Sends only read the caller's buffers; one to a dead peer
  // never completes, so it is handed back to UCX as it stands.
  for (Pending& p : *pending) {
    if (p.request == nullptr) continue;
    if (p.is_receive) {
      ucp_request_cancel(worker_.get(), p.request);
    } else {
      ucp_request_free(p.request);
      p.request = nullptr;
    }
  }
  const Clock::time_point deadline = Clock::now() + kCancelBound;
  uint64_t idle = 0;
  for (;;) {
    bool done = true;
    for (Pending& p : *pending) {
      if (p.request == nullptr) continue;
      if (ucp_request_check_status(p.request) == UCS_INPROGRESS && Clock::now() < deadline) {
        done = false;
        continue;
      }
      ucp_request_free(p.request);
      p.request = nullptr;
    }
    if (done) break;
    if (ucp_worker_progress(worker_.get()) != 0) idle = 0;
    Backoff(idle++);
  }
  pending->clear();
}

Result UcpTransport::WaitAll(std::vector<Pending>* pending, const char* what) {
  const Clock::time_point deadline = Clock::now() + timeout_;
  uint64_t idle = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (broken_.load() != ncclSuccess) {
        Release(pending);
        return static_cast<Result>(broken_.load());
      }
      while (ucp_worker_progress(worker_.get()) != 0) idle = 0;
      bool done = true;
      Result failed = ncclSuccess;
      for (Pending& p : *pending) {
        if (p.request == nullptr) continue;
        const ucs_status_t status = ucp_request_check_status(p.request);
        if (status == UCS_INPROGRESS) {
          done = false;
          continue;
        }
        if (status == UCS_OK && p.is_receive) {
          ucp_tag_recv_info_t info{};
          if (ucp_tag_recv_request_test(p.request, &info) == UCS_OK &&
              info.length != p.expected_bytes) {
            ZPP_WARN("UCP: %s: a message of %zu bytes where %zu were expected", what, info.length,
                     p.expected_bytes);
            failed = ncclInternalError;
          }
        } else if (status != UCS_OK) {
          ZPP_INFO(kInit, "UCP: %s: an operation failed: %s", what, ucs_status_string(status));
          failed = ncclRemoteError;
        }
        ucp_request_free(p.request);
        p.request = nullptr;
      }
      if (failed != ncclSuccess) {
        const Result aborted = Abort(what);
        Release(pending);
        return failed == ncclInternalError ? failed : aborted;
      }
      if (done) {
        pending->clear();
        return ncclSuccess;
      }
      if (Clock::now() >= deadline) {
        char why[160];
        std::snprintf(why, sizeof(why), "%s: nothing completed within ZPP_TIMEOUT (%lld ms)", what,
                      static_cast<long long>(timeout_.count()));
        const Result aborted = Abort(why);
        Release(pending);
        return aborted;
      }
    }
    Backoff(idle++);
  }
}

Result UcpTransport::AllGather(int rank, const GroupView& group, uint64_t sequence,
                               const void* send, void* recv, size_t bytes) {
  return Exchange(rank, group, sequence, send, 0, recv, bytes, "all-gather");
}

Result UcpTransport::AllToAll(int rank, const GroupView& group, uint64_t sequence, const void* send,
                              void* recv, size_t bytes) {
  return Exchange(rank, group, sequence, send, bytes, recv, bytes, "all-to-all");
}

Result UcpTransport::Exchange(int rank, const GroupView& group, uint64_t sequence, const void* send,
                              size_t send_stride, void* recv, size_t bytes, const char* what) {
  ZPP_CHECK(CheckUsable(rank));
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < group.members.size(); ++i) {
      const int member = group.members[i];
      if (member == rank_) continue;
      if (Result r = PostReceive(Tag(group.kind, false, member, sequence),
                                 static_cast<char*>(recv) + i * bytes, bytes, &pending);
          r != ncclSuccess) {
        Release(&pending);
        return r;
      }
    }
    for (size_t j = 0; j < group.members.size(); ++j) {
      const int member = group.members[j];
      if (member == rank_) continue;
      if (Result r = PostSend(member, Tag(group.kind, false, rank_, sequence),
                              static_cast<const char*>(send) + j * send_stride, bytes, &pending);
          r != ncclSuccess) {
        Release(&pending);
        return r;
      }
    }
  }
  // This rank's own piece (an in-place all-gather's is already there).
  char* mine = static_cast<char*>(recv) + group.my_index * bytes;
  const char* source = static_cast<const char*>(send) + group.my_index * send_stride;
  if (mine != source) std::memmove(mine, source, bytes);
  return WaitAll(&pending, what);
}

Result UcpTransport::Send(int rank, GroupKind kind, int to, uint64_t sequence, const void* send,
                          size_t bytes) {
  ZPP_CHECK(CheckUsable(rank));
  ZPP_CHECK_ARG(to >= 0 && to < size_ && to != rank_, "UCP send from rank %d to rank %d", rank_,
                to);
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ZPP_CHECK(PostSend(to, Tag(kind, true, rank_, sequence), send, bytes, &pending));
  }
  return WaitAll(&pending, "send");
}

Result UcpTransport::Recv(int rank, GroupKind kind, int from, uint64_t sequence, void* recv,
                          size_t bytes) {
  ZPP_CHECK(CheckUsable(rank));
  ZPP_CHECK_ARG(from >= 0 && from < size_ && from != rank_, "UCP receive at rank %d from rank %d",
                rank_, from);
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ZPP_CHECK(PostReceive(Tag(kind, true, from, sequence), recv, bytes, &pending));
  }
  return WaitAll(&pending, "receive");
}

}  // namespace zpp::transport
