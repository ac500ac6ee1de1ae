// SetUpZppCommunicator for builds with CUDA: topology, configuration agreement, sub-communicators
// and the engine on the cuda_nccl backend.
#include <algorithm>
#include <map>
#include <mutex>

#include "codec_gpu/codec_gpu.h"
#include "codec_gpu/device_ops.h"
#include "config/config.h"
#include "cuda_nccl/buffer_overlap.h"
#include "cuda_nccl/cuda_nccl_backend.h"
#include "cuda_nccl/zpp_communicator.h"
#include "engine/auto_tuner.h"
#include "engine/backend_byte_all_gather.h"
#include "engine/config_agreement.h"
#include "engine/engine.h"
#include "engine/idle_requests.h"
#include "engine/plan_context.h"
#include "engine/pool_reservation.h"
#include "topology/discovery.h"
#include "topology/hwloc_picture.h"
#include "topology/plan_shape.h"
#include "topology/setup_outcome.h"
#include "tune/calibration.h"

namespace zpp {
namespace {

using cuda::CudaNcclBackend;
using cuda::CudaStream;
using cuda::DeviceScope;

class CudaZppCommunicator final : public ZppCommunicator {
 public:
  CudaZppCommunicator(std::unique_ptr<CudaNcclBackend> backend, const plan::Shape& shape,
                      const engine::EngineOptions& options, StatsCounters& stats,
                      std::unique_ptr<BufferPool> pool)
      : backend_(std::move(backend)),
        stats_(stats),
        engine_(
            std::make_unique<engine::Engine>(*backend_, shape, options, stats, std::move(pool))),
        copies_(std::make_unique<BufferPool>(*backend_, options.fence_enabled)) {
    if (options.tuning) {
      tuner_ = std::make_unique<engine::AutoTuner>(*backend_, backend_->internal_stream(), *engine_,
                                                   stats, options);
    }
  }

  ~CudaZppCommunicator() override {
    DeviceScope scope(backend_->device());
    tuner_.reset();  // its timing events
    copies_.reset();
    engine_.reset();  // its buffers, then the sub-communicators
    backend_.reset();
  }

  // At set-up: what the collective path would otherwise make on first use (engine.h), and every
  // kernel loaded (kernels/kernel_loading.h).
  Result Prepare() {
    DeviceScope scope(backend_->device());
    ZPP_CHECK(scope.status());
    ZPP_CHECK(engine_->Prepare());
    // The overlapping inputs' copies are this rank's alone, but their fences' events are made
    // here too: a failure to make one after the call ran would fail it on this rank only.
    ZPP_CHECK(copies_->Prepare(kCopyFenceEvents));
    if (tuner_) ZPP_CHECK(tuner_->Prepare());
    return codec::gpu::LoadKernels();
  }

  plan::Plan Decide(const plan::Call& call) const override { return engine_->Decide(call); }

  Result AllGather(const plan::Plan& plan, const engine::AllGatherArgs& args, cudaStream_t stream,
                   plan::Plan* ran) override {
    const size_t bytes = args.count * plan::DtypeBytes(args.dtype);
    const size_t world = engine_->shape().world;
    const bool overlaps =
        OverlapsNotInPlace(args.send, bytes, args.recv, bytes * world, bytes * backend_->rank());
    return Run(stream, args, overlaps, bytes, ran,
               [&](const engine::AllGatherArgs& run, Stream& on, plan::Plan* chosen) {
                 return engine_->AllGather(plan, run, on, chosen);
               });
  }

  Result ReduceScatter(const plan::Plan& plan, const engine::ReduceScatterArgs& args,
                       cudaStream_t stream, plan::Plan* ran) override {
    const size_t bytes = args.count * plan::DtypeBytes(args.dtype);
    const size_t world = engine_->shape().world;
    const bool overlaps =
        OverlapsNotInPlace(args.recv, bytes, args.send, bytes * world, bytes * backend_->rank());
    return Run(stream, args, overlaps, bytes * world, ran,
               [&](const engine::ReduceScatterArgs& run, Stream& on, plan::Plan* chosen) {
                 return engine_->ReduceScatter(plan, run, on, chosen);
               });
  }

  Result AllReduce(const plan::Plan& plan, const engine::AllReduceArgs& args, cudaStream_t stream,
                   plan::Plan* ran) override {
    const size_t bytes = args.count * plan::DtypeBytes(args.dtype);
    // In place (send == recv) is NCCL's layout; a partial overlap is staged.
    const bool overlaps = OverlapsNotInPlace(args.send, bytes, args.recv, bytes, 0);
    return Run(stream, args, overlaps, bytes, ran,
               [&](const engine::AllReduceArgs& run, Stream& on, plan::Plan* chosen) {
                 return engine_->AllReduce(plan, run, on, chosen);
               });
  }

  bool Tuned() const override { return tuner_ != nullptr; }
  bool TrialsRunning() const override { return tuner_ && tuner_->trials_running(); }
  Result AtCall() override {
    if (!tuner_) return ncclSuccess;
    DeviceScope scope(backend_->device());
    ZPP_CHECK(scope.status());
    return tuner_->AtCall();
  }
  Result Timed(const plan::Call& call, cudaStream_t stream,
               const std::function<Result(plan::Plan* ran)>& run) override {
    if (!tuner_) return ZppCommunicator::Timed(call, stream, run);
    DeviceScope scope(backend_->device());
    ZPP_CHECK(scope.status());
    CudaStream borrowed = CudaStream::Borrow(stream);
    return tuner_->Timed(call, borrowed, run);
  }

  void Abort() override { backend_->AbortSubCommunicators(); }
  Result DeviceUsesEnded(bool* ended) override {
    DeviceScope scope(backend_->device());
    ZPP_CHECK(scope.status());
    ZPP_CHECK(engine_->UsesEnded(ended));
    if (*ended) ZPP_CHECK(copies_->UsesEnded(ended));
    return ncclSuccess;
  }
  Result AsyncError() const override { return backend_->SubCommunicatorError(); }
  bool ReadHpzChecks(uint64_t* failures, uint64_t* choices) const override {
    *failures = *choices = 0;
    return engine_ && engine_->ReadHpzChecks(failures, choices);
  }

 private:
  // Runs `call` on the caller's stream with the communicator's device current; when the input
  // (`input_bytes` at args.send) overlaps the output other than in place, on a staged copy.
  // The copy is this rank's alone (the overlap is a fact about its own pointers), so it comes
  // from a pool of its own, never from the agreed one, whose answers must stay the same on every
  // rank. Without it the call still runs: every plan reads all of its input before it writes
  // any output (the copy guards plans to come), and skipping it changes no rank's path.
  template <typename Args, typename Call>
  Result Run(cudaStream_t stream, Args args, bool overlaps, size_t input_bytes, plan::Plan* chosen,
             Call&& call) {
    DeviceScope scope(backend_->device());
    ZPP_CHECK(scope.status());
    CudaStream borrowed = CudaStream::Borrow(stream);
    engine::PlanContext context{*backend_, *copies_, borrowed};
    engine::Staging staging(context);
    if (overlaps) {
      std::byte* copy = nullptr;
      if (staging.Take(input_bytes, &copy) == ncclSuccess) {
        ZPP_CHECK(backend_->Memcpy(copy, args.send, input_bytes, borrowed));
        args.send = copy;
      } else {
        ZPP_INFO(kExec, "no memory to stage an overlapping input of %zu bytes: run without",
                 input_bytes);
      }
    }
    plan::Plan ran;
    ZPP_CHECK(call(args, borrowed, &ran));
    stats_.AddSent(zppLinkInterNode, ran.off_node_bytes);
    if (chosen != nullptr) *chosen = ran;
    return staging.Finish();
  }

  std::unique_ptr<CudaNcclBackend> backend_;
  StatsCounters& stats_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<BufferPool> copies_;            // overlapping inputs' copies (see Run)
  std::unique_ptr<engine::AutoTuner> tuner_;      // ZPP_TUNE=auto calibrated
  static constexpr size_t kCopyFenceEvents = 16;  // a copy per call in flight, a write each
};

topology::LocalFacts DiscoverLocalFacts(int device, const config::EnvLookup& env) {
  topology::LocalFacts local;
  local.host = topology::DiscoverHostIdentity(env);
  local.local_device = device;
  topology::PictureRequest request;
  char bus_id[64] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) == cudaSuccess) {
    request.gpu = topology::ParsePciAddress(bus_id);
  }
  // A failed picture only loses the GPU/NIC affinity notes; the grouping uses host records.
  if (topology::LoadLocalPicture(request, &local.picture) != ncclSuccess) {
    local.picture = topology::LocalPicture{};
  }
  return local;
}

// hwloc's walk of the machine takes a while and a framework makes many communicators: once
// per device and process.
const topology::LocalFacts& LocalFactsOf(int device, const config::EnvLookup& env) {
  static std::mutex mutex;
  static auto* facts = new std::map<int, topology::LocalFacts>();
  std::lock_guard<std::mutex> lock(mutex);
  auto found = facts->find(device);
  if (found == facts->end()) found = facts->emplace(device, DiscoverLocalFacts(device, env)).first;
  return found->second;
}

}  // namespace

bool StreamCapturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  // An error here (say, the legacy stream while another captures) counts as capturing: passing
  // through is always safe.
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

Result SetUpZppCommunicator(const NcclFunctions& nccl, ncclComm_t comm, StatsCounters& stats,
                            std::unique_ptr<ZppCommunicator>* out, std::string* why_not) {
  return SetUpZppCommunicatorWith(engine::OptionsFrom(GetConfig()), nccl, comm, stats, out,
                                  why_not);
}

namespace {

// The sub-communicators the techniques asked for need. Every input here is agreed: all ranks
// split, or none does.
Result SplitWhereAsked(CudaNcclBackend& backend, BackendByteAllGather& exchange,
                       const engine::EngineOptions& options, const topology::Topology& topology,
                       plan::Shape* shape, std::string* why_not) {
  if (!shape->config_agreed || !shape->hierarchical_allowed ||
      !(options.settings.hpz || options.settings.qgz || options.settings.qar)) {
    shape->rack_level_allowed = false;
    return ncclSuccess;
  }
  const bool split =
      backend.SplitSubCommunicators(topology, shape->rack_level_allowed) == ncclSuccess;
  topology::SetUpOutcome outcome;
  ZPP_CHECK(topology::AgreeOnOutcome(exchange, split, &outcome));
  if (outcome.all_ok) return ncclSuccess;
  *why_not = "ncclCommSplit failed on some ranks (" + outcome.Describe() + ")";
  return ncclInvalidUsage;  // the backend's destructor destroys the sub-communicators made
}

}  // namespace

Result SetUpZppCommunicatorWith(const engine::EngineOptions& options, const NcclFunctions& nccl,
                                ncclComm_t comm, StatsCounters& stats,
                                std::unique_ptr<ZppCommunicator>* out, std::string* why_not) {
  // A machine without a usable device fails here, the same way on every rank, before any
  // collective that the others would wait in.
  std::string no_device;
  if (!codec::gpu::DeviceAvailable(&no_device)) {
    *why_not = "no CUDA device (" + no_device + ")";
    return ncclInvalidUsage;
  }
  int device = 0, rank = 0, nranks = 1;
  if (nccl.CommCuDevice == nullptr || nccl.CommCuDevice(comm, &device) != ncclSuccess ||
      nccl.CommUserRank(comm, &rank) != ncclSuccess ||
      nccl.CommCount(comm, &nranks) != ncclSuccess) {
    *why_not = "the communicator's device, rank or size could not be read";
    return ncclInvalidUsage;
  }
  DeviceScope scope(device);
  ZPP_CHECK(scope.status());
  auto backend = std::make_unique<CudaNcclBackend>(nccl, comm, rank, nranks, device);
  // Before the first collective: a failure here is this rank's alone, and its peers would wait
  // in the topology exchange (a stream that cannot be created; nothing else is made here).
  *why_not = "its CUDA stream or events could not be created (ZPP_DEBUG=INFO shows the call)";
  ZPP_CHECK(backend->Init());

  // From here on every rank runs every collective below whatever it found itself, and the ranks
  // agree on the outcome after each fallible stage, so that all fall back together.
  const Config& config = GetConfig();
  const config::EnvLookup env = config::ProcessEnvironment();
  BackendByteAllGather exchange(*backend, backend->internal_stream());
  topology::Topology topology;
  bool ok = topology::DiscoverTopology(config, env, LocalFactsOf(device, env), exchange,
                                       &topology) == ncclSuccess;
  engine::ConfigAgreement agreement;
  ok = engine::AgreeOnConfiguration(*backend, backend->internal_stream(), config, &agreement) ==
           ncclSuccess &&
       ok;
  topology::SetUpOutcome outcome;
  ZPP_CHECK(topology::AgreeOnOutcome(exchange, ok, &outcome));
  if (!outcome.all_ok) {
    *why_not = "set-up failed on some ranks (" + outcome.Describe() + ", topology or settings)";
    return ncclInvalidUsage;
  }
  plan::Shape shape = topology::ShapeOf(topology);
  shape.config_agreed = agreement.agreed;

  ZPP_CHECK(SplitWhereAsked(*backend, exchange, options, topology, &shape, why_not));
  // Last, and agreed: all of zpp's staging comes from here (engine/pool_reservation.h).
  const uint64_t reserve =
      engine::StagingReservationBytes(options.settings, shape, options.pool_bytes);
  std::unique_ptr<BufferPool> pool;
  ZPP_CHECK(engine::ReserveStagingPool(*backend, exchange, reserve, options.fence_enabled, &pool));
  engine::EngineOptions tuned = options;
  if (options.tune && shape.config_agreed) {
    ZPP_CHECK(tune::SetUpTuning(*backend, backend->internal_stream(), exchange, shape,
                                options.settings, &tuned.tuning));
  }
  auto communicator = std::make_unique<CudaZppCommunicator>(std::move(backend), shape, tuned, stats,
                                                            std::move(pool));
  // Nothing fallible is left for the collective path: a rank that cannot prepare says so here,
  // and every rank falls back together (the exchange's backend now belongs to `communicator`).
  ZPP_CHECK(topology::AgreeOnOutcome(exchange, communicator->Prepare() == ncclSuccess, &outcome));
  if (!outcome.all_ok) {
    *why_not = "preparing the collective path failed on some ranks (" + outcome.Describe() +
               ": kernels or hpZ's counters)";
    return ncclInvalidUsage;
  }
  // Once per communicator, from one rank: a requested technique this topology leaves idle.
  if (rank == 0 && shape.config_agreed) {
    for (const std::string& line : engine::IdleRequestWarnings(options.settings, topology)) {
      ZPP_WARN("%s", line.c_str());
    }
  }
  *out = std::move(communicator);
  why_not->clear();
  return ncclSuccess;
}

}  // namespace zpp
