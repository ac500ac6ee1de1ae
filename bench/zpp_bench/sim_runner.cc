#include "bench/zpp_bench/sim_runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "bench/zpp_bench/bench_inputs.h"
#include "bench/zpp_bench/error_stats.h"
#include "codec/element_io.h"
#include "engine/backend_byte_all_gather.h"
#include "engine/engine.h"
#include "sim/sim_backend.h"
#include "tune/calibration.h"

namespace zpp::bench {
namespace {

// One call of `what` on this rank's engine (a sum for the reductions).
Result Call(engine::Engine& engine, const CollectiveCase& what, const void* input, void* output,
            Stream& stream, plan::Plan* ran) {
  switch (what.op) {
    case plan::CollectiveOp::kAllGather:
      return engine.AllGather({input, output, what.count, what.dtype}, stream, ran);
    case plan::CollectiveOp::kReduceScatter:
      return engine.ReduceScatter(
          {input, output, what.count, what.dtype, plan::Reduction::kSum, 1.0f}, stream, ran);
    case plan::CollectiveOp::kAllReduce:
      return engine.AllReduce({input, output, what.count, what.dtype, plan::Reduction::kSum, 1.0f},
                              stream, ran);
  }
  return ncclInvalidArgument;
}

}  // namespace

std::string SimRunner::machine() const {
  std::string cpu = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.starts_with("model name")) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return std::string(host) + ": " + cpu + ", " +
         std::to_string(std::thread::hardware_concurrency()) + " hardware threads";
}

std::string SimRunner::time_note() const {
  return "sim backend: time is the CPU time of simulating " + std::to_string(world_size()) +
         " ranks as threads on this machine (a simulation, not a network); the exact figures "
         "here are bytes per link class and errors";
}

namespace {

// A rank's engine options for `what`: one epoch (hpZ fills, never hits: docs/benchmarks.md), and
// with `tune`, as communicator set-up does under ZPP_TUNE=auto: measure, agree, build the table.
Result OptionsFor(const CollectiveCase& what, const plan::Shape& shape, sim::SimBackend& backend,
                  Stream& stream, engine::EngineOptions* options) {
  options->settings = what.settings;
  options->epoch = [] { return uint64_t{0}; };
  if (!what.tune) return ncclSuccess;
  BackendByteAllGather exchange(backend, stream);
  return tune::SetUpTuning(backend, stream, exchange, shape, options->settings, &options->tuning);
}

}  // namespace

Result SimRunner::Run(const CollectiveCase& what, Measurement* out) {
  const int n = layout_.world_size();
  const size_t element = NcclTypeBytes(what.dtype);
  const size_t in_count = InputCount(what, n);
  const size_t out_count = OutputCount(what, n);
  const plan::Shape shape = sim::ShapeOf(layout_);
  const int calls = what.warmup + what.iterations;
  ZPP_CHECK_ARG(what.iterations > 0 && what.warmup >= 0, "iterations must be > 0, warm-up >= 0");
  ZPP_CHECK_ARG(!what.through_zpp,
                "zpp-bench: mode passthrough measures zpp's NCCL hooks: it needs --backend nccl");

  sim::SimWorld world(layout_);
  std::vector<double> times_us;
  std::vector<plan::Plan> plans(n);
  std::atomic<int> failures{0};
  LaunchCounts launches;  // rank 0's, over all calls
  ErrorStats errors;
  std::barrier sync(n);
  // Every rank's input, for the reference (filled by each rank before its first call).
  std::vector<std::vector<float>> held(n);
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    std::vector<uint8_t> input(in_count * element);
    std::vector<uint8_t> output(out_count * element);
    held[rank] = HeldInput(rank, in_count, what.dtype);
    codec::StoreElements(input.data(), what.dtype, 0, in_count, held[rank].data());

    StatsCounters stats;
    std::unique_ptr<Stream> stream;
    const bool have_stream = backend.CreateStream(&stream) == ncclSuccess;
    engine::EngineOptions options;
    if (!have_stream || OptionsFor(what, shape, backend, *stream, &options) != ncclSuccess) {
      ++failures;
    }
    engine::Engine engine(backend, shape, options, stats);
    for (int call = 0; call < calls; ++call) {
      sync.arrive_and_wait();
      const auto start = std::chrono::steady_clock::now();
      if (have_stream) {
        if (Call(engine, what, input.data(), output.data(), *stream, &plans[rank]) != ncclSuccess) {
          ++failures;
        }
        backend.Synchronize(*stream);
      }
      if (rank == 0) launches = backend.launches();
      sync.arrive_and_wait();  // the call ends when the last rank's output is there
      if (rank == 0 && call >= what.warmup) {
        const auto elapsed = std::chrono::steady_clock::now() - start;
        times_us.push_back(std::chrono::duration<double, std::micro>(elapsed).count());
      }
    }

    // The last call's output against the fp64 reference (lossless plans must match it).
    const bool lossless = Lossless(plans[rank], what.op);
    ErrorStats::Part part;
    std::vector<float> got(out_count);
    codec::LoadElements(output.data(), what.dtype, 0, out_count, got.data());
    CompareWithReference(
        what, rank, n, [&held](int src) -> const std::vector<float>& { return held[src]; }, got,
        &part);
    if (!lossless) part.wrong = 0;
    errors.Merge(part);
  });
  ZPP_CHECK_ARG(failures.load() == 0, "%d ranks failed a %s call", failures.load(),
                OpName(what.op));

  Measurement m = TimedAndCompared(std::move(times_us), errors, plans[0], what.op);
  m.bytes_intra_node = world.TotalSentBytes(zppLinkIntraNode) / calls;
  m.bytes_inter_node = world.TotalSentBytes(zppLinkInterNode) / calls;
  m.bytes_inter_rack = world.TotalSentBytes(zppLinkInterRack) / calls;
  m.kernel_launches = static_cast<double>(launches.kernels) / calls;
  m.collective_launches = static_cast<double>(launches.collectives) / calls;
  *out = m;
  return ncclSuccess;
}

}  // namespace zpp::bench
