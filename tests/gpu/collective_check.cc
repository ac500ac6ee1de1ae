// zpp-collective-check: one rank of the plugin's check on a real GPU. Run as N processes (each
// with its own NCCL_HOSTID, all sharing one GPU) under LD_PRELOAD=libzpp.so by
// tools/gpu-check.sh. For each operation, dtype and size it calls the intercepted NCCL function
// (zpp) and the real one (plain) on the same inputs, and checks:
//   - zpp's output is bitwise the CPU simulation's for the same cluster (tests/sim's harness:
//     the kernels are bitwise the CPU codec, and every plan's arithmetic is in them), except for
//     reduce-scatters that pass through, where NCCL's own summation order rules;
//   - lossless paths are bitwise plain NCCL's; all-gather outputs are identical on every rank;
//   - a grouped call runs at the group's end and equals the same call ungrouped; calls on a
//     capturing stream pass through and equal plain NCCL's (a graph replayed 100 times);
//   - hpZ: the second gather of a step equals the first, bitwise, over several steps;
//   - a communicator's life as frameworks live it (issue 25): a group ended by
//     ncclGroupSimulateEnd runs nothing and leaves no call deferred; a restart loop (split, use,
//     destroy, three times) gives zpp's reservation back each time; ncclCommRevoke on a used
//     sub-communicator returns, ncclCommShrink(NCCL_SHRINK_ABORT) excluding the last rank gives
//     a communicator zpp gathers on correctly, and the parent still works (an NCCL without them
//     answers ncclInvalidUsage: recorded as not run).
// Each rank writes its rows as JSON lines (nlohmann) to --out; the exit code says whether all
// passed.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <thread>

#include "codec/element_io.h"
#include "config/config.h"
#include "epoch/step_epoch.h"
#include "plan/planner.h"
#include "sim/cluster_layout.h"
#include "tests/sim/engine_harness.h"
#include "transport/file_rendezvous.h"
#include "zpp/zpp.h"

namespace {

using Json = nlohmann::json;

struct Options {
  int rank = 0;
  int ranks = 4;
  int local_size = 2;
  std::string dir;
  std::string out;
  std::vector<size_t> counts = {1000, 262144, 1048613};
  int replays = 100;
  bool skip_lifecycle = false;  // the communicator's life: restart loops, revoke and shrink
};

// The real NCCL the program links, bypassing libzpp.so's hooks (RTLD_NEXT from here would
// find zpp's, which comes first in the search order).
struct PlainNccl {
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
};

PlainNccl LoadPlain() {
  PlainNccl plain;
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen("libnccl.so", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return plain;
  plain.all_gather = reinterpret_cast<decltype(&ncclAllGather)>(dlsym(handle, "ncclAllGather"));
  plain.reduce_scatter =
      reinterpret_cast<decltype(&ncclReduceScatter)>(dlsym(handle, "ncclReduceScatter"));
  plain.all_reduce = reinterpret_cast<decltype(&ncclAllReduce)>(dlsym(handle, "ncclAllReduce"));
  return plain;
}

// zpp's C API when libzpp.so is preloaded (mode "nccl" runs without it).
struct ZppApi {
  decltype(&zppGetCommStats) comm_stats = nullptr;
  decltype(&zppStepEpochAdvance) advance = nullptr;
};

ZppApi LoadZpp() {
  ZppApi api;
  api.comm_stats =
      reinterpret_cast<decltype(&zppGetCommStats)>(dlsym(RTLD_DEFAULT, "zppGetCommStats"));
  api.advance =
      reinterpret_cast<decltype(&zppStepEpochAdvance)>(dlsym(RTLD_DEFAULT, "zppStepEpochAdvance"));
  return api;
}

#define CHECK_CUDA(call)                                                                        \
  do {                                                                                          \
    const cudaError_t e = (call);                                                               \
    if (e != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)
#define CHECK_NCCL(call)                                                                        \
  do {                                                                                          \
    const ncclResult_t r = (call);                                                              \
    if (r != ncclSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r)); \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)

// Rank 0 makes the id and publishes it as a file; the others wait for it.
bool ShareId(const Options& options, ncclUniqueId* id) {
  const std::string path = (std::filesystem::path(options.dir) / "nccl_id").string();
  const auto bytes = std::as_writable_bytes(std::span(id, 1));
  if (options.rank == 0) {
    return ncclGetUniqueId(id) == ncclSuccess && zpp::PublishFile(path, bytes) == ncclSuccess;
  }
  return zpp::AwaitFile(path, bytes, std::chrono::seconds(120)) == ncclSuccess;
}

uint64_t Hash(const std::vector<uint8_t>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

size_t Differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t element) {
  size_t count = 0;
  for (size_t i = 0; i + element <= a.size() && i + element <= b.size(); i += element) {
    count += std::memcmp(&a[i], &b[i], element) != 0;
  }
  return count;
}

// Relative L2 and max abs error of `got` against the fp64 reference.
std::pair<double, double> Errors(const std::vector<uint8_t>& got, ncclDataType_t dtype,
                                 const std::vector<double>& reference) {
  double diff2 = 0, ref2 = 0, max_abs = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double d = zpp::test::ElementAt(got, dtype, i) - reference[i];
    diff2 += d * d;
    ref2 += reference[i] * reference[i];
    max_abs = std::max(max_abs, std::abs(d));
  }
  return {ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2), max_abs};
}

const char* DtypeName(ncclDataType_t dtype) {
  return dtype == ncclFloat32 ? "float" : dtype == ncclFloat16 ? "half" : "bfloat16";
}

class Checker {
 public:
  // Each row goes to `out` as it is recorded: a run stopped by its time limit (a sanitizer's)
  // still tells how far it got.
  Checker(const Options& options, ncclComm_t comm, cudaStream_t stream, std::ostream& out)
      : options_(options),
        comm_(comm),
        stream_(stream),
        out_(out),
        plain_(LoadPlain()),
        zpp_(LoadZpp()) {
    layout_ =
        zpp::sim::ClusterLayout::Uniform(options.ranks / options.local_size, options.local_size);
    shape_ = zpp::sim::ShapeOf(layout_);
    settings_ = zpp::plan::SettingsFrom(zpp::GetConfig());
  }

  bool ready() const {
    return plain_.all_gather != nullptr && plain_.reduce_scatter != nullptr &&
           plain_.all_reduce != nullptr;
  }
  size_t recorded() const { return recorded_; }
  bool all_ok() const { return all_ok_; }

  // One collective, zpp and plain, against the simulation. Returns non-zero on a CUDA failure.
  int Collective(zpp::plan::CollectiveOp op, ncclDataType_t dtype, size_t count,
                 zpp::plan::Reduction reduction, const char* label);
  int Grouped(size_t count);
  int Captured(size_t count);
  int HpzSteps(size_t count, int steps);
  int SimulatedGroup(size_t count);
  // Split, use, then destroy (or abort: an in-process restart) the sub-communicator, `rounds`
  // times: zpp's reservation must come back each time.
  int RestartLoop(size_t count, int rounds, bool abort);
  int RevokeAndShrink(size_t count);

 private:
  // One zpp all-gather on `comm` against plain NCCL's on the same input: the differing elements
  // (lossless modes), or -1 on a CUDA or NCCL failure.
  long GatherOn(ncclComm_t comm, int ranks, size_t count);
  void Record(Json row, bool ok) {
    row["rank"] = options_.rank;
    row["ok"] = ok;
    all_ok_ = all_ok_ && ok;
    out_ << row.dump() << std::endl;
    ++recorded_;
  }
  zppStats_t Stats() const {
    zppStats_t stats{};
    if (zpp_.comm_stats != nullptr) zpp_.comm_stats(comm_, &stats);
    return stats;
  }
  int Upload(const std::vector<double>& values, ncclDataType_t dtype, void** device);
  int Download(const void* device, size_t bytes, std::vector<uint8_t>* host);
  bool SameOnEveryRank(uint64_t hash);

  const Options& options_;
  ncclComm_t comm_;
  cudaStream_t stream_;
  std::ostream& out_;
  PlainNccl plain_;
  ZppApi zpp_;
  zpp::sim::ClusterLayout layout_;
  zpp::plan::Shape shape_;
  zpp::plan::Settings settings_;
  size_t recorded_ = 0;  // rows written to out_
  bool all_ok_ = true;
};

int Checker::Upload(const std::vector<double>& values, ncclDataType_t dtype, void** device) {
  std::vector<float> floats(values.begin(), values.end());
  std::vector<uint8_t> bytes(values.size() * zpp::NcclTypeBytes(dtype));
  zpp::codec::StoreElements(bytes.data(), dtype, 0, floats.size(), floats.data());
  CHECK_CUDA(cudaMalloc(device, bytes.size() + 16));
  CHECK_CUDA(cudaMemcpy(*device, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return 0;
}

int Checker::Download(const void* device, size_t bytes, std::vector<uint8_t>* host) {
  host->resize(bytes);
  CHECK_CUDA(cudaStreamSynchronize(stream_));
  CHECK_CUDA(cudaMemcpy(host->data(), device, bytes, cudaMemcpyDeviceToHost));
  return 0;
}

// All ranks' hashes through plain NCCL; true when all equal this rank's.
bool Checker::SameOnEveryRank(uint64_t hash) {
  uint64_t* device = nullptr;
  if (cudaMalloc(&device, sizeof(uint64_t) * (options_.ranks + 1)) != cudaSuccess) return false;
  cudaMemcpy(device, &hash, sizeof(hash), cudaMemcpyHostToDevice);
  plain_.all_gather(device, device + 1, 1, ncclUint64, comm_, stream_);
  std::vector<uint64_t> all(options_.ranks);
  cudaStreamSynchronize(stream_);
  cudaMemcpy(all.data(), device + 1, sizeof(uint64_t) * options_.ranks, cudaMemcpyDeviceToHost);
  cudaFree(device);
  for (uint64_t h : all) {
    if (h != hash) return false;
  }
  return true;
}

int Checker::Collective(zpp::plan::CollectiveOp op, ncclDataType_t dtype, size_t count,
                        zpp::plan::Reduction reduction, const char* label) {
  const bool gather = op == zpp::plan::CollectiveOp::kAllGather;
  const bool all_reduce = op == zpp::plan::CollectiveOp::kAllReduce;
  zpp::test::CollectiveSpec spec;
  spec.op = op;
  spec.count = count;
  spec.dtype = dtype;
  spec.reduction = reduction;
  spec.seed = static_cast<uint32_t>(count * 31 + dtype);
  const zpp::test::CollectiveRun sim = zpp::test::RunCollective(layout_, shape_, settings_, spec);
  const int n = options_.ranks;
  const size_t element = zpp::NcclTypeBytes(dtype);
  const size_t out_count = gather ? count * n : count;

  void* input = nullptr;
  void* out_zpp = nullptr;
  void* out_plain = nullptr;
  if (Upload(sim.input[options_.rank], dtype, &input) != 0) return 1;
  CHECK_CUDA(cudaMalloc(&out_zpp, out_count * element + 16));
  CHECK_CUDA(cudaMalloc(&out_plain, out_count * element + 16));
  const zppStats_t before = Stats();
  const ncclRedOp_t nccl_op = reduction == zpp::plan::Reduction::kAvg ? ncclAvg : ncclSum;
  if (gather) {
    CHECK_NCCL(ncclAllGather(input, out_zpp, count, dtype, comm_, stream_));
    CHECK_NCCL(plain_.all_gather(input, out_plain, count, dtype, comm_, stream_));
  } else if (all_reduce) {
    CHECK_NCCL(ncclAllReduce(input, out_zpp, count, dtype, nccl_op, comm_, stream_));
    CHECK_NCCL(plain_.all_reduce(input, out_plain, count, dtype, nccl_op, comm_, stream_));
  } else {
    CHECK_NCCL(ncclReduceScatter(input, out_zpp, count, dtype, nccl_op, comm_, stream_));
    CHECK_NCCL(plain_.reduce_scatter(input, out_plain, count, dtype, nccl_op, comm_, stream_));
  }
  std::vector<uint8_t> got, plain;
  if (Download(out_zpp, out_count * element, &got) != 0) return 1;
  if (Download(out_plain, out_count * element, &plain) != 0) return 1;
  const zppStats_t after = Stats();
  const uint64_t zpp_calls = (after.calls[zppPathQwz] - before.calls[zppPathQwz]) +
                             (after.calls[zppPathHpz] - before.calls[zppPathHpz]) +
                             (after.calls[zppPathQgz] - before.calls[zppPathQgz]) +
                             (after.calls[zppPathQar] - before.calls[zppPathQar]);

  // The fp64 reference.
  std::vector<double> reference(out_count, 0.0);
  for (size_t i = 0; i < out_count; ++i) {
    if (gather) {
      reference[i] = sim.input[i / count][i % count];
    } else if (all_reduce) {
      for (int r = 0; r < n; ++r) reference[i] += sim.input[r][i];
      if (reduction == zpp::plan::Reduction::kAvg) reference[i] /= n;
    } else {
      for (int r = 0; r < n; ++r) reference[i] += sim.input[r][options_.rank * count + i];
      if (reduction == zpp::plan::Reduction::kAvg) reference[i] /= n;
    }
  }
  const auto [rel_l2, max_abs] = Errors(got, dtype, reference);
  const bool passed_through = zpp_calls == 0;
  // A reduce-scatter NCCL ran sums in NCCL's order, not the simulation's; so did the
  // hierarchical all-reduce's intra-node stage (NCCL's reduce-scatter), whose rounding then
  // reaches the quantized stages: it is held to its error budget instead (all_reduce_test.cc's
  // model, 1.2 x sqrt(2) x one quantization's error).
  const bool comparable_to_sim = gather || (!passed_through && !all_reduce);
  const size_t wrong_vs_sim =
      comparable_to_sim ? Differing(got, sim.output[options_.rank], element) : 0;
  const bool lossless = gather ? (passed_through || !settings_.qwz) : passed_through;
  const size_t wrong_vs_plain = Differing(got, plain, element);
  // Every rank's gathered weights and all-reduced buffer are the same bytes (replicas).
  const bool identical = !(gather || all_reduce) || SameOnEveryRank(Hash(got));
  const double budget = 1.2 * std::sqrt(2.0) * (settings_.qar_bits == 8 ? 0.00697 : 0.129) + 0.01;
  const bool within_budget = !all_reduce || passed_through || rel_l2 <= budget;
  const bool ok =
      wrong_vs_sim == 0 && (!lossless || wrong_vs_plain == 0) && identical && within_budget;
  Record({{"case", label},
          {"op", gather ? "allgather" : (all_reduce ? "allreduce" : "reducescatter")},
          {"dtype", DtypeName(dtype)},
          {"count", count},
          {"zpp_calls", zpp_calls},
          {"wrong_vs_sim", wrong_vs_sim},
          {"lossless", lossless},
          {"wrong_vs_plain", wrong_vs_plain},
          {"identical_across_ranks", identical},
          {"rel_l2_err", rel_l2},
          {"max_abs_err", max_abs}},
         ok);
  cudaFree(input);
  cudaFree(out_zpp);
  cudaFree(out_plain);
  return 0;
}

// A zpp all-gather inside a group with another NCCL call: run at the group's end, bitwise the
// same as the same call outside a group (and as plain NCCL's where lossless).
int Checker::Grouped(size_t count) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = std::sin(0.001 * i + options_.rank);
  void* input = nullptr;
  void* grouped = nullptr;
  void* alone = nullptr;
  void* plain = nullptr;
  const size_t bytes = count * 4 * options_.ranks;
  if (Upload(values, ncclFloat32, &input) != 0) return 1;
  CHECK_CUDA(cudaMalloc(&grouped, bytes));
  CHECK_CUDA(cudaMalloc(&alone, bytes));
  CHECK_CUDA(cudaMalloc(&plain, bytes));
  const zppStats_t before = Stats();
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclAllGather(input, grouped, count, ncclFloat32, comm_, stream_));
  CHECK_NCCL(plain_.all_gather(input, plain, count, ncclFloat32, comm_, stream_));
  CHECK_NCCL(ncclGroupEnd());
  CHECK_NCCL(ncclAllGather(input, alone, count, ncclFloat32, comm_, stream_));
  std::vector<uint8_t> got, reference, exact;
  if (Download(grouped, bytes, &got) != 0 || Download(alone, bytes, &reference) != 0 ||
      Download(plain, bytes, &exact) != 0) {
    return 1;
  }
  const zppStats_t after = Stats();
  const uint64_t zpp_calls = (after.calls[zppPathQwz] - before.calls[zppPathQwz]) +
                             (after.calls[zppPathHpz] - before.calls[zppPathHpz]);
  const size_t wrong = Differing(got, reference, 4);
  const bool lossless = zpp_calls == 0 || !settings_.qwz;
  const size_t wrong_vs_plain = Differing(got, exact, 4);
  Record({{"case", "group"},
          {"count", count},
          {"zpp_calls", zpp_calls},
          {"wrong_vs_ungrouped", wrong},
          {"lossless", lossless},
          {"wrong_vs_plain", wrong_vs_plain}},
         wrong == 0 && (!lossless || wrong_vs_plain == 0));
  cudaFree(input);
  cudaFree(grouped);
  cudaFree(alone);
  cudaFree(plain);
  return 0;
}

// An all-gather captured in a CUDA graph and replayed: passed through, equal to plain.
int Checker::Captured(size_t count) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = std::cos(0.002 * i + options_.rank);
  void* input = nullptr;
  void* a = nullptr;
  void* b = nullptr;
  if (Upload(values, ncclBfloat16, &input) != 0) return 1;
  CHECK_CUDA(cudaMalloc(&a, count * 2 * options_.ranks));
  CHECK_CUDA(cudaMalloc(&b, count * 2 * options_.ranks));
  const zppStats_t before = Stats();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  CHECK_NCCL(ncclAllGather(input, a, count, ncclBfloat16, comm_, stream_));
  CHECK_CUDA(cudaStreamEndCapture(stream_, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_NCCL(plain_.all_gather(input, b, count, ncclBfloat16, comm_, stream_));
  std::vector<uint8_t> plain;
  if (Download(b, count * 2 * options_.ranks, &plain) != 0) return 1;
  size_t wrong = 0;
  for (int replay = 0; replay < options_.replays; ++replay) {
    CHECK_CUDA(cudaMemsetAsync(a, 0xEE, count * 2 * options_.ranks, stream_));
    CHECK_CUDA(cudaGraphLaunch(exec, stream_));
    std::vector<uint8_t> got;
    if (Download(a, count * 2 * options_.ranks, &got) != 0) return 1;
    wrong += Differing(got, plain, 2);
  }
  const zppStats_t after = Stats();
  const uint64_t captured =
      after.passthrough[zppReasonCapture] - before.passthrough[zppReasonCapture];
  Record({{"case", "graph-capture"},
          {"count", count},
          {"replays", options_.replays},
          {"wrong_vs_plain", wrong},
          {"capture_passthroughs", captured}},
         wrong == 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(input);
  cudaFree(a);
  cudaFree(b);
  return 0;
}

// Forward and backward gathers of the same weights over several steps, the epoch advanced
// after each: the backward output equals the forward one (an hpZ hit or not).
int Checker::HpzSteps(size_t count, int steps) {
  void* input = nullptr;
  void* forward = nullptr;
  void* backward = nullptr;
  std::vector<double> values(count);
  const size_t bytes = count * 2 * options_.ranks;
  CHECK_CUDA(cudaMalloc(&forward, bytes));
  CHECK_CUDA(cudaMalloc(&backward, bytes));
  const zppStats_t before = Stats();
  size_t wrong = 0;
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < count; ++i) values[i] = std::sin(0.01 * i + step + 7 * options_.rank);
    if (input == nullptr && Upload(values, ncclBfloat16, &input) != 0) return 1;
    std::vector<float> floats(values.begin(), values.end());
    std::vector<uint8_t> host(count * 2);
    zpp::codec::StoreElements(host.data(), ncclBfloat16, 0, count, floats.data());
    CHECK_CUDA(cudaMemcpyAsync(input, host.data(), host.size(), cudaMemcpyHostToDevice, stream_));
    CHECK_NCCL(ncclAllGather(input, forward, count, ncclBfloat16, comm_, stream_));
    CHECK_NCCL(ncclAllGather(input, backward, count, ncclBfloat16, comm_, stream_));
    std::vector<uint8_t> f, b;
    if (Download(forward, bytes, &f) != 0 || Download(backward, bytes, &b) != 0) return 1;
    wrong += Differing(f, b, 2);
    if (zpp_.advance != nullptr) zpp_.advance(nullptr);
    zpp::ProcessStepEpoch().Advance();  // the simulation's rounding streams follow the epoch
  }
  const zppStats_t after = Stats();
  Record({{"case", "hpz-steps"},
          {"count", count},
          {"steps", steps},
          {"backward_differs", wrong},
          {"hpz_hits", after.hpz_hits - before.hpz_hits},
          {"hpz_verify_failures", after.hpz_verify_failures - before.hpz_verify_failures}},
         wrong == 0 && after.hpz_verify_failures == before.hpz_verify_failures);
  cudaFree(input);
  cudaFree(forward);
  cudaFree(backward);
  return 0;
}

long Checker::GatherOn(ncclComm_t comm, int ranks, size_t count) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = std::sin(0.003 * i + options_.rank);
  void* input = nullptr;
  void* got = nullptr;
  void* plain = nullptr;
  const size_t bytes = count * 4 * static_cast<size_t>(ranks);
  if (Upload(values, ncclFloat32, &input) != 0 || cudaMalloc(&got, bytes) != cudaSuccess ||
      cudaMalloc(&plain, bytes) != cudaSuccess) {
    return -1;
  }
  long wrong = -1;
  std::vector<uint8_t> a, b;
  if (ncclAllGather(input, got, count, ncclFloat32, comm, stream_) == ncclSuccess &&
      plain_.all_gather(input, plain, count, ncclFloat32, comm, stream_) == ncclSuccess &&
      Download(got, bytes, &a) == 0 && Download(plain, bytes, &b) == 0) {
    wrong = settings_.qwz ? 0 : static_cast<long>(Differing(a, b, 4));
  }
  cudaFree(input);
  cudaFree(got);
  cudaFree(plain);
  return wrong;
}

// PyTorch's estimate path: a group ended by ncclGroupSimulateEnd runs nothing of zpp's, and the
// next (real) calls run as if it never happened.
int Checker::SimulatedGroup(size_t count) {
  void* input = nullptr;
  void* out = nullptr;
  std::vector<double> values(count, 1.0);
  if (Upload(values, ncclFloat32, &input) != 0) return 1;
  CHECK_CUDA(cudaMalloc(&out, count * 4 * options_.ranks));
  const zppStats_t before = Stats();
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclAllGather(input, out, count, ncclFloat32, comm_, stream_));
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  const ncclResult_t simulated = ncclGroupSimulateEnd(&info);
  const zppStats_t after_simulation = Stats();
  const long wrong = GatherOn(comm_, options_.ranks, count);
  const uint64_t ran = (after_simulation.calls[zppPathQwz] - before.calls[zppPathQwz]) +
                       (after_simulation.calls[zppPathHpz] - before.calls[zppPathHpz]);
  Record({{"case", "simulate-end"},
          {"count", count},
          {"result", static_cast<int>(simulated)},
          {"estimated_us", info.estimatedTime},
          {"zpp_calls_in_simulation", ran},
          {"wrong_after", wrong}},
         simulated == ncclSuccess && ran == 0 && wrong == 0);
  cudaFree(input);
  cudaFree(out);
  return 0;
}

// A training job restarting its process group: split, use, destroy, again. zpp's reservation
// (ZPP_POOL_MB per communicator with a plan) must come back at each destroy.
int Checker::RestartLoop(size_t count, int rounds, bool abort) {
  size_t free_first = 0, free_last = 0, total = 0;
  long wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    ncclComm_t sub = nullptr;
    CHECK_NCCL(ncclCommSplit(comm_, 0, options_.rank, &sub, nullptr));
    if (abort) {
      // An aborted state is freed at the next creation once its device work ran: here, with
      // one live sub-communicator and the previous round's state due.
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemGetInfo(round == 1 ? &free_first : &free_last, &total));
    }
    const long w = GatherOn(sub, options_.ranks, count);
    wrong = w < 0 || wrong < 0 ? -1 : wrong + w;
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    if (abort) {
      CHECK_NCCL(ncclCommAbort(sub));
    } else {
      CHECK_NCCL(ncclCommDestroy(sub));
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemGetInfo(round == 0 ? &free_first : &free_last, &total));
    }
  }
  // The other ranks share the GPU and restart at their own pace: a margin of one reservation's
  // worth of other processes' churn is not what this looks for, growth per round is.
  const double grown_mib =
      (static_cast<double>(free_first) - static_cast<double>(free_last)) / (1 << 20);
  Record({{"case", abort ? "restart-loop-abort" : "restart-loop"},
          {"rounds", rounds},
          {"wrong", wrong},
          {"free_mib_first", free_first >> 20},
          {"free_mib_last", free_last >> 20},
          {"kept_mib", grown_mib}},
         wrong == 0 && grown_mib < 256);
  return 0;
}

// PyTorch's fault tolerance on a sub-communicator zpp has set up and used: revoke then abort;
// and shrink with NCCL_SHRINK_ABORT excluding the last rank (as torch's shrink_group does: the
// excluded rank does not call it and aborts its parent), an all-gather on the shrunk
// communicator (one node with one rank less: zpp plans it afresh); the parent keeps working.
// Each entry point is looked up, not linked: an NCCL older than 2.28.7 (the GPU machine's system
// one was 2.28.3) has no ncclCommRevoke, and a link-time reference would stop the plain-NCCL
// run from loading; under zpp its forwarder answers ncclInvalidUsage then. Either missing is
// recorded as not run, not as passed.
int Checker::RevokeAndShrink(size_t count) {
  const auto revoke_fn =
      reinterpret_cast<decltype(&ncclCommRevoke)>(dlsym(RTLD_DEFAULT, "ncclCommRevoke"));
  const auto shrink_fn =
      reinterpret_cast<decltype(&ncclCommShrink)>(dlsym(RTLD_DEFAULT, "ncclCommShrink"));
  ncclComm_t revoked = nullptr;
  CHECK_NCCL(ncclCommSplit(comm_, 0, options_.rank, &revoked, nullptr));
  const long used = GatherOn(revoked, options_.ranks, count);
  CHECK_CUDA(cudaStreamSynchronize(stream_));
  const ncclResult_t revoke = revoke_fn ? revoke_fn(revoked, 0) : ncclInvalidUsage;
  const ncclResult_t aborted = ncclCommAbort(revoked);
  ncclComm_t parent = nullptr, shrunk = nullptr;
  CHECK_NCCL(ncclCommSplit(comm_, 0, options_.rank, &parent, nullptr));
  const long parent_used = GatherOn(parent, options_.ranks, count);
  CHECK_CUDA(cudaStreamSynchronize(stream_));
  int excluded = options_.ranks - 1;
  ncclResult_t shrink = ncclSuccess;
  long shrunk_used = 0;
  if (options_.rank != excluded) {
    shrink = shrink_fn ? shrink_fn(parent, &excluded, 1, &shrunk, nullptr, NCCL_SHRINK_ABORT)
                       : ncclInvalidUsage;
    if (shrink == ncclSuccess) shrunk_used = GatherOn(shrunk, options_.ranks - 1, count);
    CHECK_CUDA(cudaStreamSynchronize(stream_));
  }
  if (shrunk != nullptr) ncclCommDestroy(shrunk);
  // The world gathers before anyone aborts the parent: the excluded rank's abort must not race
  // the others' shrink, which still reads the parent.
  const long after = GatherOn(comm_, options_.ranks, count);
  ncclCommAbort(parent);
  const bool revoke_lacking = revoke == ncclInvalidUsage;
  const bool shrink_lacking = shrink == ncclInvalidUsage;
  std::string not_run;
  if (revoke_lacking) not_run += "this NCCL lacks ncclCommRevoke; ";
  if (shrink_lacking) not_run += "this NCCL lacks ncclCommShrink";
  Record({{"case", "revoke-shrink"},
          {"count", count},
          {"revoke", static_cast<int>(revoke)},
          {"abort_after_revoke", static_cast<int>(aborted)},
          {"shrink_abort", static_cast<int>(shrink)},
          {"excluded_rank", excluded},
          {"not_run", not_run},
          {"wrong_before", used},
          {"wrong_on_shrunk", shrunk_used},
          {"wrong_on_parent_after", after}},
         used == 0 && parent_used == 0 && after == 0 && aborted == ncclSuccess &&
             (revoke_lacking || revoke == ncclSuccess) &&
             (shrink_lacking || (shrink == ncclSuccess && shrunk_used == 0)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"zpp-collective-check: one rank of the plugin's GPU check"};
  app.add_option("--rank", options.rank, "this process's rank")->required();
  app.add_option("--ranks", options.ranks, "ranks in all")->required();
  app.add_option("--local-size", options.local_size, "ranks per simulated node (ZPP_LOCAL_SIZE)");
  app.add_option("--dir", options.dir, "a folder the ranks share (the NCCL id)")->required();
  app.add_option("--out", options.out, "JSON lines of this rank's results")->required();
  app.add_option("--counts", options.counts, "elements per rank to test");
  app.add_option("--replays", options.replays, "graph replays");
  app.add_flag("--no-lifecycle", options.skip_lifecycle,
               "skip the restart loops and revoke/shrink (under a sanitizer every new "
               "communicator costs minutes)");
  CLI11_PARSE(app, argc, argv);

  CHECK_CUDA(cudaSetDevice(0));
  ncclUniqueId id{};
  if (!ShareId(options, &id)) {
    std::fprintf(stderr, "rank %d: no NCCL id in %s\n", options.rank, options.dir.c_str());
    return 1;
  }
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, options.ranks, id, options.rank));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::ofstream out(options.out);
  Checker checker(options, comm, stream, out);
  if (!checker.ready()) {
    std::fprintf(stderr, "rank %d: the real NCCL's functions were not found\n", options.rank);
    return 1;
  }
  using zpp::plan::CollectiveOp;
  using zpp::plan::Reduction;
  for (ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    for (size_t count : options.counts) {
      if (checker.Collective(CollectiveOp::kAllGather, dtype, count, Reduction::kNone, "sweep") ||
          checker.Collective(CollectiveOp::kReduceScatter, dtype, count, Reduction::kSum,
                             "sweep") ||
          checker.Collective(CollectiveOp::kReduceScatter, dtype, count, Reduction::kAvg,
                             "sweep-avg") ||
          checker.Collective(CollectiveOp::kAllReduce, dtype, count, Reduction::kSum, "sweep") ||
          checker.Collective(CollectiveOp::kAllReduce, dtype, count, Reduction::kAvg,
                             "sweep-avg")) {
        return 1;
      }
    }
  }
  const size_t big = options.counts.back();
  if (checker.Grouped(big) || checker.Captured(big) || checker.HpzSteps(big, 5) ||
      checker.SimulatedGroup(big)) {
    return 1;
  }
  if (!options.skip_lifecycle &&
      (checker.RestartLoop(big, 3, false) || checker.RestartLoop(big, 4, true) ||
       checker.RevokeAndShrink(big))) {
    return 1;
  }

  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  std::printf("rank %d: %zu checks, %s\n", options.rank, checker.recorded(),
              checker.all_ok() ? "all passed" : "FAILURES");
  return checker.all_ok() ? 0 : 2;
}
