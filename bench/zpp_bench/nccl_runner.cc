#include "bench/zpp_bench/nccl_runner.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "bench/zpp_bench/bench_inputs.h"
#include "bench/zpp_bench/error_stats.h"
#include "bench/zpp_bench/predicted_bytes.h"
#include "codec/element_io.h"
#include "codec_gpu/codec_gpu.h"
#include "config/config.h"
#include "cuda_nccl/cuda_resources.h"
#include "cuda_nccl/zpp_communicator.h"
#include "plan/planner.h"
#include "step/mode.h"
#include "transport/file_rendezvous.h"

namespace zpp::bench {
namespace {

// Rank 0 makes the id and publishes it as the file `name`; the others wait for it.
Result ShareId(const NcclRunnerOptions& options, const char* name, ncclUniqueId* id) {
  const std::string path = (std::filesystem::path(options.dir) / name).string();
  const auto bytes = std::as_writable_bytes(std::span(id, 1));
  if (options.rank == 0) {
    ZPP_CHECK(ncclGetUniqueId(id));
    return PublishFile(path, bytes);
  }
  return AwaitFile(path, bytes, std::chrono::seconds(120));
}

// libzpp.so beside this binary (BUILD/bin/../lib), whose exported nccl* hooks mode
// "passthrough" calls.
std::string ZppLibraryPath() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return (exe.parent_path().parent_path() / "lib" / "libzpp.so").string();
}

// The real NCCL's table with the calls mode "passthrough" makes taken from zpp's hooks.
template <typename Function>
bool TakeHook(void* zpp, const char* name, Function* member) {
  *member = reinterpret_cast<Function>(dlsym(zpp, name));
  return *member != nullptr;
}

// A device buffer for the length of one case.
struct Buffer {
  std::unique_ptr<DeviceMemory> memory;
  void* data() const { return memory->data(); }
};

class NcclRunner final : public CollectiveRunner {
 public:
  explicit NcclRunner(const NcclRunnerOptions& options) : options_(options) {}
  ~NcclRunner() override {
    zpp_.clear();
    if (hooked_comm_ != nullptr) hooked_.CommDestroy(hooked_comm_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
    if (comm_ != nullptr) nccl_.CommDestroy(comm_);
  }

  Result Init() {
    std::string no_device;
    ZPP_CHECK_ARG(codec::gpu::DeviceAvailable(&no_device),
                  "zpp-bench: --backend nccl needs a GPU: %s", no_device.c_str());
    std::string error;
    ZPP_CHECK_ARG(LoadNcclFunctions(GetConfig().nccl_library, &nccl_, &error) == ncclSuccess,
                  "zpp-bench: %s", error.c_str());
    int devices = 0;
    ZPP_CUDA_CHECK(cudaGetDeviceCount(&devices));
    // One GPU for all ranks (NCCL_HOSTID per rank), or one per local rank.
    ZPP_CUDA_CHECK(cudaSetDevice(devices == 1 ? 0 : options_.rank % devices));
    ncclUniqueId id{};
    ZPP_CHECK(ShareId(options_, "zpp_bench_nccl_id", &id));
    ZPP_CHECK(nccl_.CommInitRank(&comm_, options_.ranks, id, options_.rank));
    ZPP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ZPP_CUDA_CHECK(cudaEventCreate(&start_));
    ZPP_CUDA_CHECK(cudaEventCreate(&stop_));
    return ncclSuccess;
  }

  int world_size() const override { return options_.ranks; }
  std::string backend() const override { return "nccl"; }
  std::string machine() const override {
    cudaDeviceProp props{};
    int device = 0;
    cudaGetDevice(&device);
    cudaGetDeviceProperties(&props, device);
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    return std::string(host) + ": " + props.name;
  }
  std::string nccl_version() const override {
    const int v = nccl_.version;
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
  }
  std::string time_note() const override {
    return "nccl backend: time is the median of CUDA-event times on rank 0's stream; bytes are "
           "the cost model's prediction for the plan (the sim backend counts them exactly)";
  }

  Result Run(const CollectiveCase& what, Measurement* out) override;

 private:
  // The NCCL a case calls, and on which communicator.
  struct Route {
    const NcclFunctions* nccl;
    ncclComm_t comm;
  };
  Result CommunicatorFor(const CollectiveCase& what, ZppCommunicator** out);
  // Mode "passthrough": a communicator made through zpp's hooks, on first use (every rank runs
  // the same cases, so every rank makes it at the same case).
  Result ThroughZpp(Route* out);
  Result Call(const CollectiveCase& what, ZppCommunicator* zpp, const plan::Plan& plan,
              const void* in, void* out, plan::Plan* ran = nullptr);
  // ZPP_TUNE=auto: the trials, before the measured calls, as the plugin runs them: each step
  // epoch a few calls, each planned after the tuner's advance and timed.
  Result RunTrials(const CollectiveCase& what, ZppCommunicator* zpp, const void* in, void* out);
  // The case's calls: per timed call, its device time (CUDA events) and the host time of making
  // it.
  Result TimeCalls(const CollectiveCase& what, ZppCommunicator* zpp, const plan::Plan& plan,
                   const void* in, void* out, std::vector<double>* device_us,
                   std::vector<double>* host_us);

  const NcclRunnerOptions options_;
  NcclFunctions nccl_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  StatsCounters stats_;
  std::map<std::string, std::unique_ptr<ZppCommunicator>> zpp_;  // by mode
  std::map<std::string, std::shared_ptr<uint64_t>> epochs_;      // each mode's step epoch
  NcclFunctions hooked_;                                         // mode "passthrough"
  ncclComm_t hooked_comm_ = nullptr;
  Route route_{&nccl_, nullptr};  // the case's, set by Run
};

Result NcclRunner::ThroughZpp(Route* out) {
  if (hooked_comm_ == nullptr) {
    const std::string path = ZppLibraryPath();
    void* zpp = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept: zpp's state lives in it
    ZPP_CHECK_ARG(zpp != nullptr, "zpp-bench: mode passthrough needs %s: %s", path.c_str(),
                  dlerror());
    hooked_ = nccl_;
    ZPP_CHECK_ARG(TakeHook(zpp, "ncclCommInitRank", &hooked_.CommInitRank) &&
                      TakeHook(zpp, "ncclCommDestroy", &hooked_.CommDestroy) &&
                      TakeHook(zpp, "ncclAllGather", &hooked_.AllGather) &&
                      TakeHook(zpp, "ncclReduceScatter", &hooked_.ReduceScatter) &&
                      TakeHook(zpp, "ncclAllReduce", &hooked_.AllReduce),
                  "zpp-bench: %s lacks an nccl* hook", path.c_str());
    ncclUniqueId id{};
    ZPP_CHECK(ShareId(options_, "zpp_bench_nccl_id_through_zpp", &id));
    ZPP_CHECK(hooked_.CommInitRank(&hooked_comm_, options_.ranks, id, options_.rank));
  }
  *out = {&hooked_, hooked_comm_};
  return ncclSuccess;
}

Result NcclRunner::CommunicatorFor(const CollectiveCase& what, ZppCommunicator** out) {
  auto found = zpp_.find(what.mode);
  if (found == zpp_.end()) {
    engine::EngineOptions options = engine::OptionsFrom(GetConfig());
    options.settings = what.settings;
    options.tune = what.tune;
    // One epoch for the measured calls: hpZ fills, as on the sim (the trials advance it).
    auto epoch = epochs_.emplace(what.mode, std::make_shared<uint64_t>(0)).first->second;
    options.epoch = [epoch] { return *epoch; };
    std::unique_ptr<ZppCommunicator> zpp;
    std::string why_not;
    const Result result = SetUpZppCommunicatorWith(options, nccl_, comm_, stats_, &zpp, &why_not);
    ZPP_CHECK_ARG(result == ncclSuccess, "zpp-bench: mode %s: %s", what.mode.c_str(),
                  why_not.c_str());
    found = zpp_.emplace(what.mode, std::move(zpp)).first;
  }
  *out = found->second.get();
  return ncclSuccess;
}

Result NcclRunner::RunTrials(const CollectiveCase& what, ZppCommunicator* zpp, const void* in,
                             void* out) {
  constexpr int kCallsPerEpoch = 4;
  constexpr int kMostEpochs = 64;
  uint64_t& epoch = *epochs_.at(what.mode);
  for (int epochs = 0; zpp->TrialsRunning(); ++epochs) {
    ZPP_CHECK_ARG(epochs < kMostEpochs, "zpp-bench: mode %s: the trials ran %d step epochs",
                  what.mode.c_str(), kMostEpochs);
    ++epoch;
    for (int call = 0; call < kCallsPerEpoch; ++call) {
      ZPP_CHECK(zpp->AtCall());
      const plan::Plan plan = zpp->Decide(CallOf(what));
      ZPP_CHECK(zpp->Timed(CallOf(what), stream_,
                           [&](plan::Plan* ran) { return Call(what, zpp, plan, in, out, ran); }));
    }
  }
  return ncclSuccess;
}

Result NcclRunner::Call(const CollectiveCase& what, ZppCommunicator* zpp, const plan::Plan& plan,
                        const void* in, void* out, plan::Plan* ran) {
  if (ran != nullptr) *ran = plan;
  const bool nccl = zpp == nullptr || plan.kind == plan::PlanKind::kPassThrough;
  switch (what.op) {  // NCCL's call where the plugin would forward it
    case plan::CollectiveOp::kAllGather:
      return nccl ? route_.nccl->AllGather(in, out, what.count, what.dtype, route_.comm, stream_)
                  : zpp->AllGather(plan, {in, out, what.count, what.dtype}, stream_, ran);
    case plan::CollectiveOp::kReduceScatter:
      return nccl ? route_.nccl->ReduceScatter(in, out, what.count, what.dtype, ncclSum,
                                               route_.comm, stream_)
                  : zpp->ReduceScatter(
                        plan,
                        {in, out, what.count, what.dtype, plan::Reduction::kSum, 1.0f, nullptr},
                        stream_, ran);
    case plan::CollectiveOp::kAllReduce:
      return nccl ? route_.nccl->AllReduce(in, out, what.count, what.dtype, ncclSum, route_.comm,
                                           stream_)
                  : zpp->AllReduce(
                        plan,
                        {in, out, what.count, what.dtype, plan::Reduction::kSum, 1.0f, nullptr},
                        stream_, ran);
  }
  return ncclInvalidArgument;
}

Result NcclRunner::TimeCalls(const CollectiveCase& what, ZppCommunicator* zpp,
                             const plan::Plan& plan, const void* in, void* out,
                             std::vector<double>* device_us, std::vector<double>* host_us) {
  for (int call = 0; call < what.warmup + what.iterations; ++call) {
    ZPP_CUDA_CHECK(cudaEventRecord(start_, stream_));
    const auto host_start = std::chrono::steady_clock::now();
    ZPP_CHECK(Call(what, zpp, plan, in, out));
    const std::chrono::duration<double, std::micro> enqueue =
        std::chrono::steady_clock::now() - host_start;
    ZPP_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    ZPP_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    ZPP_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    if (call < what.warmup) continue;
    host_us->push_back(enqueue.count());
    device_us->push_back(1000.0 * ms);
  }
  return ncclSuccess;
}

Result NcclRunner::Run(const CollectiveCase& what, Measurement* out) {
  const int n = options_.ranks;
  const size_t element = NcclTypeBytes(what.dtype);
  const size_t in_count = InputCount(what, n);
  const size_t out_count = OutputCount(what, n);
  ZPP_CHECK_ARG(what.iterations > 0 && what.warmup >= 0, "iterations must be > 0, warm-up >= 0");

  const int nodes = n / std::max(1, options_.local_size);
  ZppCommunicator* zpp = nullptr;
  plan::Plan plan = PlainPlan(what, nodes, options_.local_size);
  route_ = {&nccl_, comm_};
  if (what.through_zpp) {
    ZPP_CHECK(ThroughZpp(&route_));
  } else if (what.mode != "plain") {
    ZPP_CHECK(CommunicatorFor(what, &zpp));
  }

  const std::vector<float> mine = HeldInput(options_.rank, in_count, what.dtype);
  std::vector<uint8_t> host(std::max(in_count, out_count) * element);
  codec::StoreElements(host.data(), what.dtype, 0, in_count, mine.data());
  Buffer input, output;
  ZPP_CHECK(cuda::DeviceBuffer::Create(in_count * element, &input.memory));
  ZPP_CHECK(cuda::DeviceBuffer::Create(out_count * element, &output.memory));
  ZPP_CUDA_CHECK(cudaMemcpy(input.data(), host.data(), in_count * element, cudaMemcpyHostToDevice));
  if (zpp != nullptr) {
    if (zpp->Tuned()) ZPP_CHECK(RunTrials(what, zpp, input.data(), output.data()));
    plan = zpp->Decide(CallOf(what));
  }

  zppStats_t before{};
  stats_.Snapshot(&before);
  std::vector<double> times_us, host_us;
  ZPP_CHECK(TimeCalls(what, zpp, plan, input.data(), output.data(), &times_us, &host_us));

  // This rank's output of the last call against the fp64 reference.
  ZPP_CUDA_CHECK(
      cudaMemcpy(host.data(), output.data(), out_count * element, cudaMemcpyDeviceToHost));
  std::vector<float> got(out_count);
  codec::LoadElements(host.data(), what.dtype, 0, out_count, got.data());
  ErrorStats errors;
  ErrorStats::Part part;
  std::vector<std::vector<float>> inputs(n);  // made on first use, each once
  CompareWithReference(
      what, options_.rank, n,
      [&](int src) -> const std::vector<float>& {
        if (inputs[src].empty()) inputs[src] = HeldInput(src, in_count, what.dtype);
        return inputs[src];
      },
      got, &part);
  errors.Merge(part);

  Measurement m = TimedAndCompared(std::move(times_us), errors, plan, what.op);
  m.host_us = Median(std::move(host_us));
  SetPredictedBytes(plan, what, nodes, options_.local_size, &m);
  // Launches per call, as the sim counts them (its rows and these compare): a call NCCL runs is
  // one collective; zpp's plans count theirs in the stats, per path.
  const double calls = what.warmup + what.iterations;
  if (zpp == nullptr || plan.kind == plan::PlanKind::kPassThrough) {
    m.kernel_launches = 0;
    m.collective_launches = 1;
  } else {
    zppStats_t after{};
    stats_.Snapshot(&after);
    uint64_t kernels = 0, collectives = 0;
    for (int path = 0; path < zppNumPaths; ++path) {
      kernels += after.kernel_launches[path] - before.kernel_launches[path];
      collectives += after.collective_launches[path] - before.collective_launches[path];
    }
    m.kernel_launches = static_cast<double>(kernels) / calls;
    m.collective_launches = static_cast<double>(collectives) / calls;
  }
  *out = m;
  return ncclSuccess;
}

}  // namespace

Result MakeNcclRunner(const NcclRunnerOptions& options, std::unique_ptr<CollectiveRunner>* out) {
  auto runner = std::make_unique<NcclRunner>(options);
  ZPP_CHECK(runner->Init());
  *out = std::move(runner);
  return ncclSuccess;
}

}  // namespace zpp::bench
