#include "cpu_comm/cpu_comm.h"

#include <chrono>

#include "config/config.h"
#include "cpu_comm/call_label.h"
#include "engine/auto_tuner.h"
#include "engine/backend_byte_all_gather.h"
#include "engine/config_agreement.h"
#include "engine/engine.h"
#include "engine/idle_requests.h"
#include "log/log.h"
#include "sim/cluster_layout.h"
#include "sim/sim_backend.h"
#include "sim/sim_world.h"
#include "topology/discovery.h"
#include "topology/plan_shape.h"
#include "topology/setup_outcome.h"
#include "transport/ucp_transport.h"
#include "tune/calibration.h"

namespace zpp::cpu {
namespace {

// The simulated cluster the grouping describes: node n is the topology's node n (numbered by
// lowest rank), in its rack.
sim::ClusterLayout LayoutOf(const topology::Topology& topology) {
  sim::ClusterLayout layout;
  layout.node_of_rank = topology.node_of_rank;
  for (const topology::NodeInfo& node : topology.nodes) layout.rack_of_node.push_back(node.rack);
  return layout;
}

}  // namespace

CpuComm::CpuComm(int rank, int size, std::function<uint64_t()> epoch,
                 std::unique_ptr<transport::UcpTransport> transport)
    : rank_(rank),
      size_(size),
      epoch_(std::move(epoch)),
      transport_(std::move(transport)),
      stats_(&ProcessStats()) {}

CpuComm::~CpuComm() {
  // The engine's buffers and the stream's worker before the backend and world they use; the
  // transport (endpoints, worker, context) last.
  engine_.reset();
  stream_.reset();
  backend_.reset();
  world_.reset();
}

Result CpuComm::Open(int rank, int size, std::function<uint64_t()> epoch,
                     std::unique_ptr<CpuComm>* out, transport::Address* address,
                     std::chrono::milliseconds requested) {
  ZPP_CHECK_ARG(out != nullptr && address != nullptr, "CpuComm::Open: NULL output" ZPP_BUG_REPORT);
  ReportConfigOnce();
  std::chrono::milliseconds timeout = std::chrono::seconds(GetConfig().timeout);
  if (requested.count() > 0 && requested < timeout) timeout = requested;
  std::unique_ptr<transport::UcpTransport> transport;
  ZPP_CHECK(transport::UcpTransport::Open(rank, size, transport::UcpTransport::Reach::kAnyMachine,
                                          timeout, &transport, address));
  out->reset(new CpuComm(rank, size, std::move(epoch), std::move(transport)));
  return ncclSuccess;
}

Result CpuComm::Connect(const std::vector<transport::Address>& addresses) {
  std::lock_guard<std::mutex> lock(mutex_);
  log::ScopedRank scoped_rank(rank_);
  ZPP_CHECK_ARG(engine_ == nullptr,
                "zppCpuCommConnect: zpp cpu communicator (rank %d) is already connected; the call "
                "returns ncclInvalidArgument (connect once)",
                rank_);
  ZPP_CHECK(transport_->Connect(addresses));

  // The topology exchange needs a world to run on, and the world needs the topology: a flat
  // one first, for the exchange only. Worlds on one transport follow each other safely (UCP
  // matches equal tags in the order they were sent, and this exchange completes first).
  const Config& config = GetConfig();
  const config::EnvLookup env = config::ProcessEnvironment();
  {
    sim::SimWorld flat(sim::ClusterLayout::Uniform(1, size_), rank_, transport_);
    sim::SimBackend backend(flat, rank_);
    std::unique_ptr<Stream> stream;
    ZPP_CHECK(backend.CreateStream(&stream));
    BackendByteAllGather exchange(backend, *stream);
    topology::LocalFacts local;
    local.host = topology::DiscoverHostIdentity(env);
    ZPP_CHECK(topology::DiscoverTopology(config, env, local, exchange, &topology_));
    ZPP_CHECK(backend.AsyncError());
  }

  world_ = std::make_unique<sim::SimWorld>(LayoutOf(topology_), rank_, transport_);
  backend_ = std::make_unique<sim::SimBackend>(*world_, rank_);
  ZPP_CHECK(backend_->CreateStream(&stream_));
  plan::Shape shape = topology::ShapeOf(topology_);
  engine::ConfigAgreement agreement;
  ZPP_CHECK(engine::AgreeOnConfiguration(*backend_, *stream_, config, &agreement));
  ZPP_CHECK(backend_->AsyncError());
  shape.config_agreed = agreement.agreed;
  config_difference_ = agreement.first_difference;
  engine::EngineOptions options = engine::OptionsFrom(config);
  options.epoch = epoch_;
  // As the plugin: the rack level only where a hierarchical plan may use it.
  if (!(shape.config_agreed && shape.hierarchical_allowed &&
        (options.settings.hpz || options.settings.qgz))) {
    shape.rack_level_allowed = false;
  }
  BackendByteAllGather exchange(*backend_, *stream_);
  if (options.tune && shape.config_agreed) {
    ZPP_CHECK(
        tune::SetUpTuning(*backend_, *stream_, exchange, shape, options.settings, &options.tuning));
    ZPP_CHECK(backend_->AsyncError());
  }
  engine_ = std::make_unique<engine::Engine>(*backend_, shape, options, stats_);
  if (options.tuning) {
    tuner_ = std::make_unique<engine::AutoTuner>(*backend_, *stream_, *engine_, stats_, options);
  }
  // What the collective path would otherwise make on first use, agreed (engine.h).
  const bool prepared =
      engine_->Prepare() == ncclSuccess && (!tuner_ || tuner_->Prepare() == ncclSuccess);
  topology::SetUpOutcome outcome;
  ZPP_CHECK(topology::AgreeOnOutcome(exchange, prepared, &outcome));
  ZPP_CHECK_ARG(
      outcome.all_ok,
      "zppCpuCommConnect: preparing the engine failed on %s; the call returns ncclInvalidArgument "
      "and the communicator runs no collective (ZPP_DEBUG=INFO on those ranks shows why)",
      outcome.Describe().c_str());
  ZPP_INFO(kInit, "zpp cpu communicator: rank %d of %d, %d node(s) (%s)", rank_, size_,
           topology_.num_nodes(), topology_.hierarchy_reason.c_str());
  if (rank_ == 0 && shape.config_agreed) {
    for (const std::string& line : engine::IdleRequestWarnings(options.settings, topology_)) {
      ZPP_WARN("%s", line.c_str());
    }
  }
  // Everything this world sent so far was set-up: the agreements and the calibration.
  CountControlSince({});
  return ncclSuccess;
}

Result CpuComm::Finish(Result launched) {
  // Whatever was enqueued must end before the caller's buffers may be touched again.
  backend_->Synchronize(*stream_);
  ZPP_CHECK(launched);
  return backend_->AsyncError();
}

std::array<uint64_t, zppNumLinks> CpuComm::SentSoFar() const {
  std::array<uint64_t, zppNumLinks> sent{};
  for (int link = 0; link < zppNumLinks; ++link) {
    sent[link] = world_->SentBytes(rank_, static_cast<zppLink_t>(link));
  }
  return sent;
}

void CpuComm::CountControlSince(const std::array<uint64_t, zppNumLinks>& before) {
  const std::array<uint64_t, zppNumLinks> now = SentSoFar();
  for (int link = 0; link < zppNumLinks; ++link) {
    stats_.AddControlSent(static_cast<zppLink_t>(link), now[link] - before[link]);
  }
}

template <typename Body>
Result CpuComm::Counted(Body&& body) {
  const std::array<uint64_t, zppNumLinks> before = SentSoFar();
  const Result result = Finish(body());
  const std::array<uint64_t, zppNumLinks> now = SentSoFar();
  for (int link = 0; link < zppNumLinks; ++link) {
    stats_.AddSent(static_cast<zppLink_t>(link), now[link] - before[link]);
  }
  return result;
}

template <typename Body>
Result CpuComm::Timed(const plan::Call& call, Body&& body) {
  if (!tuner_) return Counted([&] { return body(nullptr); });
  const std::array<uint64_t, zppNumLinks> before = SentSoFar();
  const Result advanced = tuner_->AtCall();
  CountControlSince(before);  // the ranks' agreement at an epoch advance, outside any call
  ZPP_CHECK(advanced);
  // Counted waits for the call: its timing events have run when the call returns.
  return Counted([&] { return tuner_->Timed(call, *stream_, body); });
}

// Every collective entry: the communicator's lock, the rank in every log line, a connected
// communicator, and the transport's label for the call (numbered only once it can run).
template <typename Label, typename Body>
Result CpuComm::Entered(const char* api, Label&& label, Body&& body) {
  std::lock_guard<std::mutex> lock(mutex_);
  log::ScopedRank scoped_rank(rank_);
  ZPP_CHECK_ARG(
      engine_ != nullptr,
      "%s: zpp cpu communicator (rank %d) is not connected; the call returns "
      "ncclInvalidArgument (call zppCpuCommConnect first, or open a new communicator if it failed)",
      api, rank_);
  transport_->BeginCall(label(++calls_));
  return body();
}

// A collective the engine runs: entered, then timed.
template <typename Args, typename Label, typename Run>
Result CpuComm::EngineCall(const char* api, const Args& args, Label label, Run run) {
  return Entered(
      api, [&](uint64_t number) { return label(number, args); },
      [&] {
        return Timed(engine::CallOf(args), [&](plan::Plan* ran) { return run(*engine_, ran); });
      });
}

Result CpuComm::AllGather(const engine::AllGatherArgs& args) {
  return EngineCall(
      "zppCpuAllGather", args, AllGatherLabel,
      [&](engine::Engine& e, plan::Plan* ran) { return e.AllGather(args, *stream_, ran); });
}

Result CpuComm::ReduceScatter(const engine::ReduceScatterArgs& args) {
  return EngineCall(
      "zppCpuReduceScatter", args, ReduceScatterLabel,
      [&](engine::Engine& e, plan::Plan* ran) { return e.ReduceScatter(args, *stream_, ran); });
}

Result CpuComm::AllReduce(const engine::AllReduceArgs& args) {
  return EngineCall(
      "zppCpuAllReduce", args, AllReduceLabel,
      [&](engine::Engine& e, plan::Plan* ran) { return e.AllReduce(args, *stream_, ran); });
}

Result CpuComm::AllGatherBytes(const void* send, void* recv, size_t bytes) {
  return Entered(
      "zppCpuAllGatherBytes", [&](uint64_t number) { return AllGatherBytesLabel(number, bytes); },
      [&] { return Finish(backend_->AllGather(send, recv, bytes, GroupKind::kWorld, *stream_)); });
}

Result CpuComm::Broadcast(void* data, size_t bytes, int root) {
  ZPP_CHECK_ARG(
      root >= 0 && root < size_,
      "zppCpuBroadcastBytes: root %d is not a rank of %d; the call returns ncclInvalidArgument",
      root, size_);
  return Entered(
      "zppCpuBroadcastBytes", [&](uint64_t number) { return BroadcastLabel(number, bytes, root); },
      [&] {
        if (rank_ != root) {
          return Finish(backend_->Recv(data, bytes, root, GroupKind::kWorld, *stream_));
        }
        for (int peer = 0; peer < size_; ++peer) {
          if (peer == rank_) continue;
          const Result sent = backend_->Send(data, bytes, peer, GroupKind::kWorld, *stream_);
          if (sent != ncclSuccess) return Finish(sent);
        }
        return Finish(ncclSuccess);
      });
}

void CpuComm::Snapshot(zppStats_t* out) const { stats_.Snapshot(out); }

bool CpuComm::ReadHpzChecks(uint64_t* failures, uint64_t* choices) const {
  std::lock_guard<std::mutex> lock(mutex_);
  *failures = *choices = 0;
  return engine_ != nullptr && engine_->ReadHpzChecks(failures, choices);
}

std::string CpuComm::Failure() const { return transport_->Failure(); }

}  // namespace zpp::cpu
