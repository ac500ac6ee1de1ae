// A stand-in for libnccl.so in CPU tests: the calls zpp forwards, with NCCL's argument checks
// (null communicator or buffers, unknown dtype or op: ncclInvalidArgument) and a log of what
// arrived, so that a test can tell a forwarded call from one zpp answered itself. It lacks
// ncclCommShrink, ncclCommInitRankScalable and ncclAlltoAll on purpose, like an older NCCL.
#include <nccl.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

struct FakeComm {
  int nranks = 1;
  int rank = 0;
};

std::mutex mutex;
std::map<std::string, int> calls;
int group_depth = 0;
int next_op = ncclNumOps;

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

}  // namespace

extern "C" {

// The test's window on the fake: how many times `name` arrived.
__attribute__((visibility("default"))) int fakeNcclCalls(const char* name) {
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = calls.find(name);
  return found == calls.end() ? 0 : found->second;
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

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId, int rank,
                                    ncclConfig_t* config) {
  Log(__func__);
  const ncclResult_t result = NewComm(comm, nranks, rank);
  if (result == ncclSuccess && config != nullptr && config->blocking == 0) return ncclInProgress;
  return result;
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int*) {
  Log(__func__);
  for (int i = 0; i < ndev; ++i) {
    if (NewComm(&comms[i], ndev, i) != ncclSuccess) return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int, ncclComm_t* newcomm, ncclConfig_t*) {
  Log(__func__);
  if (comm == nullptr) return ncclInvalidArgument;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  return NewComm(newcomm, Of(comm)->nranks, Of(comm)->rank);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Log(__func__);
  return comm == nullptr ? ncclInvalidArgument : ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  Log(__func__);
  if (comm == nullptr) return ncclInvalidArgument;
  delete Of(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  Log(__func__);
  if (comm == nullptr) return ncclInvalidArgument;
  delete Of(comm);
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

ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* error) {
  *error = ncclSuccess;
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
  --group_depth;
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
  return ncclSuccess;
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  Log(__func__);
  if (comm == nullptr || BadDtype(dtype) || op < 0 || op >= next_op) return ncclInvalidArgument;
  if (count > 0 && (send == nullptr || recv == nullptr)) return ncclInvalidArgument;
  return ncclSuccess;
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
