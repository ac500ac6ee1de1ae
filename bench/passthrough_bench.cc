// The interposer's own host cost on a call it passes through (issue 45): the same call made
// straight into the NCCL zpp loaded (here the stand-in, tests/plugin/fake_nccl.cc) and through
// zpp's exported hook, interleaved round by round. The communicator is one zpp set up (the
// recording double of the decision tests, 2 nodes x 2 ranks), so each call goes through the whole
// decision: the communicator's look-up, the reason, the counters. Prints JSON: per case, the
// per-call nanoseconds of each way per round and their medians. A benchmark, not a test: the
// figures belong in bench/results/, never in an assertion. Usage: zpp-passthrough-bench [CALLS]
// (per round and way; 200000).
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "zpp/zpp.h"

namespace {

constexpr int kRounds = 21;
int calls_per_round = 200000;  // argv[1] when given (the ctest entry runs a few)

using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);
using AllGatherFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t,
                                     cudaStream_t);

struct Ways {
  std::function<ncclResult_t()> direct;
  std::function<ncclResult_t()> through;
};

double NanosecondsPerCall(const std::function<ncclResult_t()>& call) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls_per_round; ++i) {
    if (call() != ncclSuccess) {
      std::fprintf(stderr, "passthrough-bench: a call failed\n");
      std::exit(1);
    }
  }
  const std::chrono::duration<double, std::nano> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / calls_per_round;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string Joined(const std::vector<double>& values) {
  std::string text;
  for (const double value : values) {
    text += (text.empty() ? "" : ", ") + std::to_string(value);
  }
  return text;
}

// Rounds alternate which way goes first, so neither always meets a warmer cache.
void Measure(const char* name, const Ways& ways, bool last) {
  std::vector<double> direct, through, difference;
  for (int round = 0; round < kRounds; ++round) {
    const bool direct_first = round % 2 == 0;
    const double first = NanosecondsPerCall(direct_first ? ways.direct : ways.through);
    const double second = NanosecondsPerCall(direct_first ? ways.through : ways.direct);
    direct.push_back(direct_first ? first : second);
    through.push_back(direct_first ? second : first);
    difference.push_back(through.back() - direct.back());
  }
  std::printf(
      "    {\"case\": \"%s\", \"direct_ns\": [%s], \"through_ns\": [%s],\n"
      "     \"median_direct_ns\": %.1f, \"median_through_ns\": %.1f, "
      "\"median_overhead_ns\": %.1f}%s\n",
      name, Joined(direct).c_str(), Joined(through).c_str(), Median(direct), Median(through),
      Median(difference), last ? "" : ",");
}

template <typename Fn>
Fn Symbol(void* library, const char* name) {
  auto* symbol = reinterpret_cast<Fn>(dlsym(library, name));
  if (symbol == nullptr) {
    std::fprintf(stderr, "passthrough-bench: the stand-in NCCL has no %s\n", name);
    std::exit(1);
  }
  return symbol;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) calls_per_round = std::max(1, std::atoi(argv[1]));
  setenv("ZPP_NCCL_LIBRARY", ZPP_FAKE_NCCL, 1);
  setenv("ZPP_QWZ", "1", 1);  // a set-up communicator whose small calls pass through
  setenv("ZPP_QAR", "1", 1);
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  if (ncclCommInitRank(&comm, 4, id, 1) != ncclSuccess) return 1;
  void* nccl = dlopen(ZPP_FAKE_NCCL, RTLD_NOW | RTLD_NOLOAD);  // loaded by zpp's first hook
  if (nccl == nullptr) return 1;
  const auto all_reduce = Symbol<AllReduceFn>(nccl, "ncclAllReduce");
  const auto all_gather = Symbol<AllGatherFn>(nccl, "ncclAllGather");
  std::vector<float> send(1024), recv(4096);
  const Ways small_all_reduce{
      [&] {
        return all_reduce(send.data(), recv.data(), 256, ncclFloat32, ncclSum, comm, nullptr);
      },
      [&] {
        return ncclAllReduce(send.data(), recv.data(), 256, ncclFloat32, ncclSum, comm, nullptr);
      }};
  const Ways small_all_gather{
      [&] { return all_gather(send.data(), recv.data(), 256, ncclFloat32, comm, nullptr); },
      [&] { return ncclAllGather(send.data(), recv.data(), 256, ncclFloat32, comm, nullptr); }};
  std::printf("{\"calls_per_round\": %d, \"rounds\": %d, \"cases\": [\n", calls_per_round, kRounds);
  Measure("all-reduce, 1 KiB fp32 (reason small)", small_all_reduce, false);
  Measure("all-gather, 1 KiB fp32 (reason small)", small_all_gather, true);
  std::printf("]}\n");
  zppStats_t stats{};
  const bool counted =
      zppGetCommStats(comm, &stats) == ncclSuccess &&
      stats.passthrough[zppReasonSmall] == uint64_t{2} * kRounds * calls_per_round;  // 2 cases
  ncclCommDestroy(comm);
  dlclose(nccl);
  if (!counted) std::fprintf(stderr, "passthrough-bench: the calls were not zpp's pass-throughs\n");
  return counted ? 0 : 1;
}
