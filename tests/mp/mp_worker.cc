// zpp-mp-worker: one rank of a multi-process test, started by zpp-launch.
//   zpp-mp-worker matrix DIR          the engine matrix (matrix_cases.h); records to DIR
//   zpp-mp-worker p2p DIR             point-to-point messages (point_to_point.h)
//   zpp-mp-worker fault DIR RANK      all-gathers until RANK kills itself inside one
//   zpp-mp-worker mismatch DIR        configuration agreement with this process's ZPP_* settings
//   zpp-mp-worker load DIR COUNT      COUNT collectives of mixed sizes and modes; RSS sampled
//   zpp-mp-worker stuck-send DIR [remote]
//                                     a send that times out, its buffer unmapped, then the close;
//                                     remote: every peer taken to be on another machine
//   zpp-mp-worker stuck-receive DIR [remote]
//                                     a receive that times out matched and unfinished, its
//                                     buffer unmapped, then its rank progresses while the
//                                     peer's close sends the rest
//   zpp-mp-worker two-comms DIR ROUNDS [threads]
//                                     two ranks, two communicators over TCP (two_communicators.h)
// Exit status 0 when the rank did its part; the test process checks what it wrote.
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "codec/element_io.h"
#include "config/config.h"
#include "engine/config_agreement.h"
#include "engine/engine.h"
#include "matrix_cases.h"
#include "mp_record.h"
#include "point_to_point.h"
#include "sim/launched_world.h"
#include "sim/sim_backend.h"
#include "two_communicators.h"

namespace zpp::test {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int Matrix(const sim::LaunchedJob& job, const std::string& dir) {
  const std::vector<MatrixTopology> topologies = MatrixTopologies();
  const std::vector<MatrixCase> cases = MatrixCases();
  std::vector<RankRecord> records;
  std::unique_ptr<sim::SimWorld> world;
  int topology = -1;
  for (size_t i = 0; i < cases.size(); ++i) {
    const MatrixCase& c = cases[i];
    if (c.topology != topology) {
      topology = c.topology;
      world.reset();
      if (sim::WorldOf(job, topologies[topology].layout, &world) != ncclSuccess) return 1;
    }
    const CollectiveRun run =
        RunCollective(*world, sim::ShapeOf(world->layout()), c.settings, c.spec);
    RankRecord record;
    record.case_index = static_cast<uint32_t>(i);
    record.plan_kind = static_cast<int32_t>(run.plan.kind);
    record.plan_reason = static_cast<int32_t>(run.plan.reason);
    record.failures = run.failures;
    record.sent = run.sent_bytes[job.rank];
    record.output = run.output[job.rank];
    records.push_back(std::move(record));
  }
  return WriteRecords(RecordPath(dir, "matrix", job.rank), records) ? 0 : 1;
}

// The point-to-point ring (point_to_point.h) on two nodes of four ranks.
int PointToPoint(const sim::LaunchedJob& job, const std::string& dir) {
  std::unique_ptr<sim::SimWorld> world;
  if (sim::WorldOf(job, sim::ClusterLayout::Uniform(2, 4), &world) != ncclSuccess) return 1;
  const PointToPointRun run = RunPointToPoint(*world);
  RankRecord record;
  record.failures = run.failures;
  record.sent = run.sent_bytes[job.rank];
  record.output = run.received[job.rank];
  return WriteRecords(RecordPath(dir, "p2p", job.rank), {record}) ? 0 : 1;
}

constexpr size_t kGatherCount = 16384;  // 64 KiB of fp32 per rank

// Every rank's plain engine on two nodes of four, with a stream and its all-gather buffers:
// `calls(backend, engine, stream, in, out)` runs on each rank. False when the world failed.
template <typename Calls>
bool WithPlainEngine(const sim::LaunchedJob& job, Calls calls) {
  std::unique_ptr<sim::SimWorld> world;
  if (sim::WorldOf(job, sim::ClusterLayout::Uniform(2, 4), &world) != ncclSuccess) return false;
  world->RunRanks([&](sim::SimBackend& backend) {
    engine::EngineOptions options;
    StatsCounters stats;
    engine::Engine engine(backend, sim::ShapeOf(world->layout()), options, stats);
    std::unique_ptr<Stream> stream;
    if (backend.CreateStream(&stream) != ncclSuccess) return;
    std::vector<float> in(kGatherCount, 1.0f), out(kGatherCount * world->world_size());
    calls(backend, engine, *stream, in, out);
  });
  return true;
}

// All-gathers of 64 KiB per rank until one fails; `victim` kills itself inside the 20th. Writes
// "<async error> <next call's result> <ms from the failing call to the error> <ms teardown>".
int Fault(sim::LaunchedJob job, const std::string& dir, int victim) {
  constexpr int kVictimCall = 20;
  constexpr size_t kCount = kGatherCount;
  Result async_error = ncclSuccess, next_call = ncclSuccess;
  double failing_ms = -1;
  const bool world_ok =
      WithPlainEngine(job, [&](sim::SimBackend& backend, engine::Engine& engine, Stream& stream,
                               std::vector<float>& in, std::vector<float>& out) {
        for (int call = 0; call < 100000 && async_error == ncclSuccess; ++call) {
          const Clock::time_point start = Clock::now();
          Result result = engine.AllGather({in.data(), out.data(), kCount, ncclFloat32}, stream);
          if (backend.rank() == victim && call == kVictimCall) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));  // its sends under way
            raise(SIGKILL);
          }
          if (result == ncclSuccess) {
            backend.Synchronize(stream);
            result = backend.AsyncError();
          }
          if (result != ncclSuccess) {
            async_error = result;
            failing_ms = MillisecondsSince(start);
            next_call = engine.AllGather({in.data(), out.data(), kCount, ncclFloat32}, stream);
          }
        }
      });
  if (!world_ok) return 1;
  const Clock::time_point teardown = Clock::now();
  job.transport.reset();  // the last owner: endpoints, worker and context go here
  const double teardown_ms = MillisecondsSince(teardown);
  std::ofstream out(RecordPath(dir, "fault", job.rank));
  out << static_cast<int>(async_error) << " " << static_cast<int>(next_call) << " " << failing_ms
      << " " << teardown_ms << "\n";
  return out ? 0 : 1;
}

// Agreement on this process's settings (zpp-launch --rank-env makes one rank differ), then an
// all-gather and a reduce-scatter through the engine; records their plans and outputs.
int Mismatch(const sim::LaunchedJob& job, const std::string& dir) {
  std::unique_ptr<sim::SimWorld> world;
  if (sim::WorldOf(job, sim::ClusterLayout::Uniform(2, 4), &world) != ncclSuccess) return 1;
  const Config& config = GetConfig();
  std::vector<RankRecord> records;
  std::string difference;
  int failures = 0;
  world->RunRanks([&](sim::SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    engine::ConfigAgreement agreement;
    if (backend.CreateStream(&stream) != ncclSuccess ||
        engine::AgreeOnConfiguration(backend, *stream, config, &agreement) != ncclSuccess) {
      ++failures;
      return;
    }
    difference = agreement.first_difference;
    plan::Shape shape = sim::ShapeOf(world->layout());
    shape.config_agreed = agreement.agreed;
    StatsCounters stats;
    engine::Engine engine(backend, shape, engine::OptionsFrom(config), stats);
    const int n = world->world_size();
    constexpr size_t kCount = 1000;
    std::vector<float> in(kCount * n), out(kCount * n);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(backend.rank() * 0.5 + i);
    for (plan::CollectiveOp op :
         {plan::CollectiveOp::kAllGather, plan::CollectiveOp::kReduceScatter}) {
      plan::Plan chosen;
      const bool gather = op == plan::CollectiveOp::kAllGather;
      const Result result =
          gather ? engine.AllGather({in.data(), out.data(), kCount, ncclFloat32}, *stream, &chosen)
                 : engine.ReduceScatter({in.data(), out.data(), kCount, ncclFloat32,
                                         plan::Reduction::kSum, 1.0f, nullptr},
                                        *stream, &chosen);
      backend.Synchronize(*stream);
      RankRecord record;
      record.case_index = static_cast<uint32_t>(op);
      record.plan_kind = static_cast<int32_t>(chosen.kind);
      record.plan_reason = static_cast<int32_t>(chosen.reason);
      record.failures = result != ncclSuccess || backend.AsyncError() != ncclSuccess;
      const auto* bytes = reinterpret_cast<const uint8_t*>(out.data());
      record.output.assign(bytes, bytes + (gather ? kCount * n : kCount) * sizeof(float));
      records.push_back(std::move(record));
    }
  });
  std::ofstream(dir + "/mismatch.difference" + std::to_string(job.rank)) << difference << "\n";
  return failures == 0 && WriteRecords(RecordPath(dir, "mismatch", job.rank), records) ? 0 : 1;
}

// Resident set size in bytes (/proc/self/statm, field 2).
uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// `count` engine calls, the same pseudo-random sequence on every rank: modes plain, hpZ, qwZ
// int8, qgZ 8/8; all-gathers and reduce-scatters of 1 to 2048 fp32 elements per rank, in
// batches of eight between synchronizations. Inputs are small integers, so lossless plans must be
// exact and lossy ones within the int8 bound. Writes "<calls> <errors> <wrong> <rss after warm-up>
// <rss at the end> <largest rss seen> <seconds>".
int Load(const sim::LaunchedJob& job, const std::string& dir, int64_t count) {
  struct Mode {
    plan::Settings settings;
    double tolerance;  // absolute, on integer-valued data in [-8, 8]
  };
  auto settings = [](bool qwz, bool hpz, bool qgz) {
    plan::Settings s;
    s.qwz = qwz;
    s.hpz = hpz;
    s.qgz = qgz;
    s.qgz_bits_intra = 8;
    s.qgz_bits_inter = 8;
    s.min_bytes = 0;
    return s;
  };
  const std::vector<Mode> modes = {{settings(false, false, false), 0.0},
                                   {settings(false, true, false), 0.0},
                                   {settings(true, false, false), 8.0 / 254 * 1.001},
                                   {settings(false, false, true), 1.0}};
  constexpr size_t kSizes[] = {1, 16, 100, 256, 1000, 2048};
  constexpr int kBatch = 8;
  std::unique_ptr<sim::SimWorld> world;
  if (sim::WorldOf(job, sim::ClusterLayout::Uniform(2, 4), &world) != ncclSuccess) return 1;
  const int n = world->world_size();
  int64_t calls = 0, errors = 0, wrong = 0;
  uint64_t rss_warm = 0, rss_max = 0;
  // Each batch is a step epoch: its buffers hold new weights, as after an optimizer step.
  std::atomic<uint64_t> epoch{0};
  const Clock::time_point start = Clock::now();
  world->RunRanks([&](sim::SimBackend& backend) {
    StatsCounters stats;
    std::vector<std::unique_ptr<engine::Engine>> engines;
    for (const Mode& mode : modes) {
      engine::EngineOptions options;
      options.settings = mode.settings;
      options.epoch = [&epoch] { return epoch.load(); };
      engines.push_back(
          std::make_unique<engine::Engine>(backend, sim::ShapeOf(world->layout()), options, stats));
    }
    std::unique_ptr<Stream> stream;
    if (backend.CreateStream(&stream) != ncclSuccess) return;
    const size_t largest = kSizes[std::size(kSizes) - 1];
    std::vector<std::vector<float>> in(kBatch, std::vector<float>(largest * n));
    std::vector<std::vector<float>> out(kBatch, std::vector<float>(largest * n));
    struct Issued {
      int mode;
      bool gather;
      size_t count;
      uint64_t seed;
    };
    uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&state] {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      return state;
    };
    // Element i of rank r's input for call `seed`: an integer in [-8, 8].
    auto value = [](uint64_t seed, int r, size_t i) {
      return static_cast<float>(static_cast<int>((seed * 31 + r * 7 + i * 13) % 17) - 8);
    };
    while (calls < count && errors == 0) {
      epoch.fetch_add(1);
      std::vector<Issued> batch;
      for (int b = 0; b < kBatch && calls < count; ++b, ++calls) {
        const uint64_t random = next();
        Issued issued{static_cast<int>(random % modes.size()), ((random >> 8) & 1) == 0,
                      kSizes[(random >> 16) % std::size(kSizes)], random >> 24};
        const size_t in_count = issued.gather ? issued.count : issued.count * n;
        for (size_t i = 0; i < in_count; ++i) in[b][i] = value(issued.seed, backend.rank(), i);
        Result result = issued.gather
                            ? engines[issued.mode]->AllGather(
                                  {in[b].data(), out[b].data(), issued.count, ncclFloat32}, *stream)
                            : engines[issued.mode]->ReduceScatter(
                                  {in[b].data(), out[b].data(), issued.count, ncclFloat32,
                                   plan::Reduction::kSum, 1.0f, nullptr},
                                  *stream);
        if (result != ncclSuccess) ++errors;
        batch.push_back(issued);
      }
      backend.Synchronize(*stream);
      if (backend.AsyncError() != ncclSuccess) ++errors;
      for (size_t b = 0; b < batch.size(); ++b) {
        const Issued& issued = batch[b];
        const double tolerance = modes[issued.mode].tolerance;
        for (size_t i = 0; i < (issued.gather ? issued.count * n : issued.count); ++i) {
          double expected = 0;
          if (issued.gather) {
            expected = value(issued.seed, static_cast<int>(i / issued.count), i % issued.count);
          } else {
            const size_t at = backend.rank() * issued.count + i;
            for (int r = 0; r < n; ++r) expected += value(issued.seed, r, at);
          }
          if (!(std::abs(out[b][i] - expected) <= tolerance)) ++wrong;
        }
      }
      const uint64_t rss = ResidentBytes();
      rss_max = std::max(rss_max, rss);
      if (rss_warm == 0 && calls >= count / 10) rss_warm = rss;
    }
  });
  const double seconds = MillisecondsSince(start) / 1000;
  std::ofstream out(RecordPath(dir, "load", job.rank));
  out << calls << " " << errors << " " << wrong << " " << rss_warm << " " << ResidentBytes() << " "
      << rss_max << " " << seconds << "\n";
  return out && errors == 0 && wrong == 0 ? 0 : 1;
}

// A job that ends well, its ranks leaving without closing their transport (as an interpreter
// that never destroys its process groups), but rank 0, which closes `late_ms` later: its flushes
// find the peers gone. Rank 0 records how long its close took.
int LeaveWithoutClosing(sim::LaunchedJob job, const std::string& dir, int late_ms) {
  Result result = ncclSuccess;
  const bool world_ok =
      WithPlainEngine(job, [&](sim::SimBackend& backend, engine::Engine& engine, Stream& stream,
                               std::vector<float>& in, std::vector<float>& out) {
        for (int call = 0; call < 20 && result == ncclSuccess; ++call) {
          result = engine.AllGather({in.data(), out.data(), kGatherCount, ncclFloat32}, stream);
          if (result == ncclSuccess) {
            backend.Synchronize(stream);
            result = backend.AsyncError();
          }
        }
      });
  if (!world_ok) return 1;
  std::ofstream out(RecordPath(dir, "exit", job.rank));
  if (job.rank != 0) {
    out << static_cast<int>(result) << " 0" << std::endl;
    std::_Exit(result == ncclSuccess ? 0 : 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
  const Clock::time_point teardown = Clock::now();
  job.transport.reset();  // the last owner: endpoints, worker and context go here
  out << static_cast<int>(result) << " " << MillisecondsSince(teardown) << "\n";
  return out && result == ncclSuccess ? 0 : 1;
}

constexpr size_t kStuckBytes = size_t{64} << 20;

// An anonymous mapping of kStuckBytes, unmapped as a caller frees a buffer after an error:
// touching it then is a crash, not a silent write.
class StuckBuffer {
 public:
  StuckBuffer() = default;
  StuckBuffer(const StuckBuffer&) = delete;
  StuckBuffer& operator=(const StuckBuffer&) = delete;
  ~StuckBuffer() { Unmap(); }
  bool ok() const { return data_ != MAP_FAILED; }
  void* data() const { return data_; }
  void Unmap() {
    if (ok()) munmap(data_, kStuckBytes);
    data_ = MAP_FAILED;
  }

 private:
  void* data_ =
      mmap(nullptr, kStuckBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
};

// Rank 0 sends kStuckBytes to rank 1, which does not progress for kQuietMs: the send times out
// (ZPP_TIMEOUT=1) with most of it still queued in UCX. Rank 0 unmaps the buffer, as a caller
// frees it after the error, and closes its transport while rank 1 takes what arrives: UCX must
// not read the unmapped buffer. Rank 0 records "<send's result> <ms its close took>".
int StuckSend(sim::LaunchedJob job, const std::string& dir) {
  constexpr int kQuietMs = 2500;
  if (job.rank != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kQuietMs));
    if (job.rank == 1) {
      // A receive that never matches: for ZPP_TIMEOUT, rank 1's worker takes what rank 0 queued.
      uint64_t never = 0;
      (void)job.transport->Recv(1, GroupKind::kWorld, 2, 0, &never, sizeof(never));
    }
    return 0;
  }
  const Clock::time_point start = Clock::now();
  StuckBuffer buffer;
  if (!buffer.ok()) return 1;
  std::memset(buffer.data(), 1, kStuckBytes);
  const Result sent = job.transport->Send(0, GroupKind::kWorld, 1, 0, buffer.data(), kStuckBytes);
  buffer.Unmap();
  std::this_thread::sleep_until(start + std::chrono::milliseconds(kQuietMs + 200));
  const Clock::time_point teardown = Clock::now();
  job.transport.reset();
  std::ofstream out(RecordPath(dir, "stuck-send", job.rank));
  out << static_cast<int>(sent) << " " << MillisecondsSince(teardown) << "\n";
  return out ? 0 : 1;
}

// The receive's side. Ranks 0 and 1 exchange kStuckBytes each way: rank 0's exchange times out
// while rank 1 sleeps (its first fragments wait in rank 1's queue). Then rank 1's exchange
// matches those fragments while rank 0 does not progress, so it times out with its receive
// matched and unfinished (UCX cannot cancel it). Rank 1 unmaps its buffers and progresses its
// worker while rank 0's close sends the rest: none of it may be written into the unmapped
// buffer. Rank 1 records "<exchange's result> <ms its close took>".
int StuckReceive(sim::LaunchedJob job, const std::string& dir) {
  constexpr int kFirstFailsByMs = 1500, kCloseAtMs = 3500, kProgressMs = 800;
  const Clock::time_point start = Clock::now();
  if (job.rank > 1) {  // closes with the others (a worker closed long before its peers leaks)
    std::this_thread::sleep_until(start + std::chrono::milliseconds(kCloseAtMs + kProgressMs));
    return 0;
  }
  StuckBuffer send, receive;
  if (!send.ok() || !receive.ok()) return 1;
  std::memset(send.data(), 1, kStuckBytes);
  if (job.rank == 1) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(kFirstFailsByMs));
  }
  const int pair[] = {0, 1};
  const transport::GroupView group{GroupKind::kWorld, pair, job.rank};
  const Result result = job.transport->ExchangeParts(
      job.rank, group, 0, 1, kStuckBytes,
      [&](size_t, size_t) { return static_cast<const std::byte*>(send.data()); },
      [&](size_t, size_t) { return static_cast<std::byte*>(receive.data()); }, "exchange");
  send.Unmap();
  receive.Unmap();
  std::this_thread::sleep_until(start + std::chrono::milliseconds(kCloseAtMs));
  if (job.rank == 1) {
    auto* ucp = dynamic_cast<transport::UcpTransport*>(job.transport.get());
    if (ucp == nullptr) return 1;
    ucp->ProgressForTesting(std::chrono::milliseconds(kProgressMs));
  }
  const Clock::time_point teardown = Clock::now();
  job.transport.reset();
  if (job.rank == 0) return 0;
  std::ofstream out(RecordPath(dir, "stuck-receive", job.rank));
  out << static_cast<int>(result) << " " << MillisecondsSince(teardown) << "\n";
  return out ? 0 : 1;
}

// Writes "<rounds done> <first failure's result>".
int TwoCommunicators(const sim::LaunchedJob& job, const std::string& dir, int rounds,
                     bool on_threads) {
  const TwoCommunicatorsRun run = RunTwoCommunicators(job, rounds, on_threads);
  std::ofstream out(RecordPath(dir, "two-comms", job.rank));
  out << run.rounds_done << " " << static_cast<int>(run.first_failure) << "\n";
  return out && run.first_failure == ncclSuccess ? 0 : 1;
}

}  // namespace
}  // namespace zpp::test

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(
        stderr,
        "usage: zpp-mp-worker "
        "matrix|p2p|fault|exit|mismatch|load|stuck-send|stuck-receive|two-comms DIR [ARG]\n");
    return 2;
  }
  const std::string scenario = argv[1], dir = argv[2];
  zpp::sim::LaunchedJob job;
  // Every other scenario's layouts hold kMatrixRanks ranks: a wrong -n stops before UCX wires up.
  const bool two_comms = scenario == "two-comms";
  const bool remote = two_comms || ((scenario == "stuck-send" || scenario == "stuck-receive") &&
                                    argc > 3 && std::string(argv[3]) == "remote");
  const auto placement = remote ? zpp::transport::UcpTransport::Placement::kAllOnOtherMachines
                                : zpp::transport::UcpTransport::Placement::kAsFound;
  if (zpp::sim::JoinLaunchedJob(&job, two_comms ? 2 : zpp::test::kMatrixRanks, placement) !=
      ncclSuccess) {
    return 1;
  }
  if (scenario == "matrix") return zpp::test::Matrix(job, dir);
  if (scenario == "fault" && argc > 3)
    return zpp::test::Fault(std::move(job), dir, std::atoi(argv[3]));
  if (scenario == "p2p") return zpp::test::PointToPoint(job, dir);
  if (scenario == "exit" && argc > 3)
    return zpp::test::LeaveWithoutClosing(std::move(job), dir, std::atoi(argv[3]));
  if (scenario == "mismatch") return zpp::test::Mismatch(job, dir);
  if (scenario == "load" && argc > 3) return zpp::test::Load(job, dir, std::atoll(argv[3]));
  if (scenario == "stuck-send") return zpp::test::StuckSend(std::move(job), dir);
  if (scenario == "stuck-receive") return zpp::test::StuckReceive(std::move(job), dir);
  if (two_comms && argc > 3) {
    const bool on_threads = argc > 4 && std::string(argv[4]) == "threads";
    return zpp::test::TwoCommunicators(job, dir, std::atoi(argv[3]), on_threads);
  }
  std::fprintf(stderr, "zpp-mp-worker: unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
