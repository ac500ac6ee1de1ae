// zpp's engine for CPU processes without NCCL: one communicator of a job whose ranks are separate
// processes on the sim backend, bound over UCX (UcpTransport). The torch.distributed backend
// `zpp` (plugin/torch) makes one per process group. The ranks bootstrap elsewhere (torch's c10d
// store): each opens its transport, publishes its address, and connects once it has everyone's.
//
// Set-up is what the plugin does on an NCCL communicator: the topology from the exchanged
// records (ZPP_LOCAL_SIZE, ZPP_NODE_ID, host identity, racks), the configuration agreement, then
// the engine with the process's ZPP_* settings. Every call is synchronous: it returns once this
// rank's output is complete, or with the failure (ncclRemoteError when a peer is gone or
// ZPP_TIMEOUT passed; every later call then fails at once).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/collective_args.h"
#include "log/check.h"
#include "stats/stats.h"
#include "topology/topology.h"
#include "transport/bootstrap.h"
#include "zpp/zpp.h"

namespace zpp {
class Stream;
namespace engine {
class AutoTuner;
class Engine;
}  // namespace engine
namespace sim {
class SimBackend;
class SimWorld;
}  // namespace sim
namespace transport {
class UcpTransport;
}
}  // namespace zpp

namespace zpp::cpu {

class CpuComm {
 public:
  // Step 1: this rank's transport; `address` is what the other ranks need to reach it. `epoch`
  // is the step epoch hpZ reuse follows (empty: this library's process epoch).
  // `timeout`, when positive and shorter than ZPP_TIMEOUT, bounds every wait instead (torch's
  // init_process_group(timeout=)).
  static Result Open(int rank, int size, std::function<uint64_t()> epoch,
                     std::unique_ptr<CpuComm>* out, transport::Address* address,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  ~CpuComm();
  CpuComm(const CpuComm&) = delete;
  CpuComm& operator=(const CpuComm&) = delete;

  // Step 2, collective: every rank's address in rank order; then topology, agreement, engine.
  Result Connect(const std::vector<transport::Address>& addresses);

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Through the engine (plans, codecs, fence, hpZ cache), counted in stats().
  Result AllGather(const engine::AllGatherArgs& args);
  Result ReduceScatter(const engine::ReduceScatterArgs& args);
  Result AllReduce(const engine::AllReduceArgs& args);
  // Exact byte movement on the world group, outside the engine and its stats: what the
  // backend's other collectives (all-reduce, broadcast, barrier) are made of.
  Result AllGatherBytes(const void* send, void* recv, size_t bytes);
  Result Broadcast(void* data, size_t bytes, int root);

  // The engine's counters; sent_bytes are the bytes this rank sent over each link class in the
  // engine's calls, pass-throughs included, as the sim counts them (exactly, NCCL's ring model;
  // the plugin can only count the planner's prediction for the calls zpp runs).
  void Snapshot(zppStats_t* out) const;
  // hpZ's cumulative check counters (engine::Engine::ReadHpzChecks), for the step guard; whether
  // this communicator runs hpZ (the same on every rank: it follows the agreed settings).
  bool ReadHpzChecks(uint64_t* failures, uint64_t* choices) const;
  // The grouping, for the log and the stats table ("2 nodes x 2 ranks").
  const topology::Topology& topology() const { return topology_; }
  // Why the transport broke ("" while it works): which rank found what, and the call each rank
  // was in.
  std::string Failure() const;
  // Why the engine runs plain collectives only ("" when the settings agreed).
  const std::string& config_difference() const { return config_difference_; }

 private:
  CpuComm(int rank, int size, std::function<uint64_t()> epoch,
          std::unique_ptr<transport::UcpTransport> transport);
  Result Finish(Result launched);  // waits for the stream, reports the first failure
  // One collective entry (the lock, the log's rank, connected, the call's label), then `body`.
  template <typename Label, typename Body>
  Result Entered(const char* api, Label&& label, Body&& body);
  template <typename Args, typename Label, typename Run>
  Result EngineCall(const char* api, const Args& args, Label label, Run run);
  template <typename Body>
  Result Counted(Body&& body);
  // This rank's bytes sent so far on each link of its world (exact), and those sent since
  // `before` into the control counters (zpp's agreements and calibration, outside any call).
  std::array<uint64_t, zppNumLinks> SentSoFar() const;
  void CountControlSince(const std::array<uint64_t, zppNumLinks>& before);
  // Counted, and with ZPP_TUNE=auto timed (engine/auto_tuner.h).
  template <typename Body>
  Result Timed(const plan::Call& call, Body&& body);

  const int rank_;
  const int size_;
  const std::function<uint64_t()> epoch_;
  std::shared_ptr<transport::UcpTransport> transport_;
  std::unique_ptr<sim::SimWorld> world_;
  std::unique_ptr<sim::SimBackend> backend_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<engine::Engine> engine_;
  topology::Topology topology_;
  std::string config_difference_;
  StatsCounters stats_;
  std::unique_ptr<engine::AutoTuner> tuner_;  // ZPP_TUNE=auto calibrated
  uint64_t calls_ = 0;        // this communicator's calls so far; the transport labels each
  mutable std::mutex mutex_;  // one call at a time: the transport matches calls by order
};

}  // namespace zpp::cpu
