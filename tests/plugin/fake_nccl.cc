// A stand-in for libnccl.so in CPU tests: the calls zpp forwards, with NCCL's argument checks
// (null communicator or buffers, unknown dtype or op: ncclInvalidArgument) and a log of what
// arrived, so that a test can tell a forwarded call from one zpp answered itself. It lacks
// ncclCommInitRankScalable and ncclAlltoAll on purpose, like an older NCCL. A destroyed
// communicator's memory is kept, and fakeNcclCommGrow (an entry point zpp does not hook, as
// ncclCommGrow in newer NCCL) makes a communicator at the address of the last one destroyed, as
// an allocator reusing addresses would.
// Non-blocking communicators (config.blocking = 0) behave as NCCL documents them: creation,
// split, collectives and a group end holding one answer ncclInProgress, and the communicator
// stays in progress for a few ncclCommGetAsyncError polls.
#include <nccl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

struct FakeComm {
  int nranks = 1;
  int rank = 0;
  bool blocking = true;
  int polls_in_progress = 0;  // ncclCommGetAsyncError answers ncclInProgress this many times more
};

constexpr int kPollsInProgress = 3;

std::mutex mutex;
std::map<std::string, int> calls;
int group_depth = 0;
std::set<FakeComm*> group_nonblocking;  // non-blocking communicators with work in the open group
std::set<FakeComm*> in_progress;        // communicators with polls_in_progress > 0
int next_op = ncclNumOps;
std::vector<std::unique_ptr<FakeComm>> ended;  // destroyed or aborted, newest last

void Log(const char* name) {
  std::lock_guard<std::mutex> lock(mutex);
  ++calls[name];
}

bool BadDtype(ncclDataType_t dtype) { return dtype < 0 || dtype >= ncclNumTypes; }

ncclResult_t NewComm(ncclComm_t* comm, int nranks, int rank) {
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  *comm = reinterpret_cast<ncclComm_t>(new FakeComm{nranks, rank});
  return ncclSuccess;
}

FakeComm* Of(ncclComm_t comm) { return reinterpret_cast<FakeComm*>(comm); }

void StartProgress(FakeComm* comm) {
  std::lock_guard<std::mutex> lock(mutex);
  comm->polls_in_progress = kPollsInProgress;
  in_progress.insert(comm);
}

// A collective's answer on `comm`: in a group, NCCL answers at the group end.
ncclResult_t Issued(ncclComm_t comm) {
  if (Of(comm)->blocking) return ncclSuccess;
  if (group_depth > 0) {
    group_nonblocking.insert(Of(comm));
    return ncclSuccess;
  }
  StartProgress(Of(comm));
  return ncclInProgress;
}

void Forget(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(mutex);
  in_progress.erase(Of(comm));
  ended.emplace_back(Of(comm));
}

}  // namespace

extern "C" {

// The test's window on the fake: how many times `name` arrived.
__attribute__((visibility("default"))) int fakeNcclCalls(const char* name) {
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = calls.find(name);
  return found == calls.end() ? 0 : found->second;
}

// A communicator made outside every entry point zpp hooks, at the address of the last one
// destroyed or aborted (ncclInvalidUsage when none has ended).
__attribute__((visibility("default"))) ncclResult_t fakeNcclCommGrow(ncclComm_t* comm, int nranks,
                                                                     int rank) {
  std::lock_guard<std::mutex> lock(mutex);
  if (ended.empty()) return ncclInvalidUsage;
  FakeComm* reused = ended.back().release();
  ended.pop_back();
  *reused = FakeComm{nranks, rank};
  *comm = reinterpret_cast<ncclComm_t>(reused);
  return ncclSuccess;
}

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t) { return "fake"; }

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  Log(__func__);
  return NewComm(comm, nranks, rank);
}

// Whether a communicator zpp's test helpers ask about is still in progress; any, for a null one.
__attribute__((visibility("default"))) int fakeNcclInProgress(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(mutex);
  return comm == nullptr ? !in_progress.empty() : in_progress.count(Of(comm)) != 0;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank,
                                    ncclConfig_t* config) {
  Log(__func__);
  const ncclResult_t result = NewComm(comm, nranks, rank);
  if (result == ncclSuccess && config != nullptr && config->blocking == 0) {
    Of(*comm)->blocking = false;
    StartProgress(Of(*comm));
    return ncclInProgress;
  }
  return result;
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int*) {
  Log(__func__);
  for (int i = 0; i < ndev; ++i) {
    if (NewComm(&comms[i], ndev, i) != ncclSuccess) return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  Log(__func__);
  if (comm == nullptr) return ncclInvalidArgument;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  const ncclResult_t result = NewComm(newcomm, Of(comm)->nranks, Of(comm)->rank);
  if (result != ncclSuccess) return result;
  const bool blocking = config != nullptr && config->blocking != NCCL_CONFIG_UNDEF_INT
                            ? config->blocking != 0
                            : Of(comm)->blocking;
  Of(*newcomm)->blocking = blocking;
  if (blocking) return ncclSuccess;
  StartProgress(Of(*newcomm));
  return ncclInProgress;
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int*, int exclude_count, ncclComm_t* newcomm,
                            ncclConfig_t*, int) {
  Log(__func__);
  if (comm == nullptr || newcomm == nullptr || exclude_count < 0) return ncclInvalidArgument;
  return NewComm(newcomm, Of(comm)->nranks - exclude_count, 0);
}

ncclResult_t ncclCommRevoke(ncclComm_t comm, int) {
  Log(__func__);
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Log(__func__);
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  Log(__func__);
  if (comm == nullptr) return ncclInvalidArgument;
  Forget(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  Log(__func__);
  if (comm == nullptr) return ncclInvalidArgument;
  Forget(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr) return ncclInvalidArgument;
  *count = Of(comm)->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr) return ncclInvalidArgument;
  *rank = Of(comm)->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr) return ncclInvalidArgument;
  *device = 0;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  Log(__func__);
  if (comm == nullptr || error == nullptr) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(mutex);
  FakeComm* fake = Of(comm);
  *error = ncclSuccess;
  if (fake->polls_in_progress > 0) {
    *error = ncclInProgress;
    if (--fake->polls_in_progress == 0) in_progress.erase(fake);
  }
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  Log(__func__);
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  Log(__func__);
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0 || group_nonblocking.empty()) return ncclSuccess;
  for (FakeComm* comm : group_nonblocking) StartProgress(comm);
  group_nonblocking.clear();
  return ncclInProgress;
}

// Closes the group as an end does, launching nothing.
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t*) {
  Log(__func__);
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth == 0) group_nonblocking.clear();
  return ncclSuccess;
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t dtype,
                                      ncclScalarResidence_t, ncclComm_t comm) {
  Log(__func__);
  if (op == nullptr || scalar == nullptr || comm == nullptr || BadDtype(dtype)) {
    return ncclInvalidArgument;
  }
  *op = static_cast<ncclRedOp_t>(next_op++);
  return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t, ncclComm_t comm) {
  Log(__func__);
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                           ncclComm_t comm, cudaStream_t) {
  Log(__func__);
  if (comm == nullptr || BadDtype(dtype)) return ncclInvalidArgument;
  if (count > 0 && (send == nullptr || recv == nullptr)) return ncclInvalidArgument;
  return Issued(comm);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  Log(__func__);
  if (comm == nullptr || BadDtype(dtype) || op < 0 || op >= next_op) return ncclInvalidArgument;
  if (count > 0 && (send == nullptr || recv == nullptr)) return ncclInvalidArgument;
  return Issued(comm);
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  Log(__func__);
  if (comm == nullptr || BadDtype(dtype) || op < 0 || op >= next_op) return ncclInvalidArgument;
  if (count > 0 && (send == nullptr || recv == nullptr)) return ncclInvalidArgument;
  return Issued(comm);
}

ncclResult_t ncclSend(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  Log(__func__);
  return ncclSuccess;
}

ncclResult_t ncclRecv(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) {
  Log(__func__);
  return ncclSuccess;
}

}  // extern "C"
