#include "tune/calibration.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "log/log.h"
#include "topology/setup_outcome.h"
#include "tune/decision_table.h"
#include "zpp/format.h"

namespace zpp::tune {
namespace {

// Two sizes per level (bytes per rank): latency from the small one, bandwidth from the slope.
// The large one starts small enough that a 50 Mbit/s link takes about a second for all of it
// (13 calls a size), and grows where the link is fast (ProbeSizes).
constexpr size_t kMaxProbeBytes = 16 << 20;
constexpr size_t kMaxGatheredBytes = 256 << 20;
constexpr int kRepeats = 3;  // after one warm-up; the fastest counts
// The codec's operations on 1 Mi fp32 elements (4 MiB), int8 pieces.
constexpr size_t kCodecElements = size_t{1} << 20;

// One call's time: after a warm-up call (connections, first touch), the fastest of kRepeats
// batches of `calls` back to back, per call.
Result FastestPerCall(const std::function<Result(int calls, double* seconds)>& time_batch,
                      int calls, double* seconds) {
  double ignored = 0;
  ZPP_CHECK(time_batch(1, &ignored));
  double fastest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kRepeats; ++i) {
    double took = 0;
    ZPP_CHECK(time_batch(calls, &took));
    fastest = std::min(fastest, took);
  }
  *seconds = fastest / calls;
  return ncclSuccess;
}

// A codec operation's time: one call a batch (its own stream, nobody to wait for).
Result Fastest(Backend& backend, Stream& stream, const std::function<Result()>& work,
               double* seconds) {
  return FastestPerCall(
      [&](int calls, double* took) {
        return backend.TimeWork(
            stream,
            [&] {
              for (int c = 0; c < calls; ++c) ZPP_CHECK(work());
              return ncclSuccess;
            },
            took);
      },
      1, seconds);
}

// A collective's time at `bytes`: batches of kCallsPerBatch (calibration.h says why).
Result PerCall(const BatchTimer& time_batch, size_t bytes, double* seconds) {
  return FastestPerCall([&](int calls, double* took) { return time_batch(bytes, calls, took); },
                        kCallsPerBatch, seconds);
}

// A level's all-gather, `calls` times back to back, timed on this rank's stream.
BatchTimer LevelTimer(Backend& backend, Stream& stream, GroupKind group, DeviceMemory& send,
                      DeviceMemory& recv) {
  return [&backend, &stream, group, &send, &recv](size_t bytes, int calls, double* seconds) {
    return backend.TimeWork(
        stream,
        [&] {
          for (int c = 0; c < calls; ++c) {
            ZPP_CHECK(backend.AllGather(send.data(), recv.data(), bytes, group, stream));
          }
          return ncclSuccess;
        },
        seconds);
  };
}

}  // namespace

size_t MaxProbeBytes(int world) {
  size_t bytes = kLargeBytes;
  while (bytes * 4 <= kMaxProbeBytes &&
         bytes * 4 * static_cast<size_t>(std::max(1, world)) <= kMaxGatheredBytes) {
    bytes *= 4;
  }
  return bytes;
}

Result FitLevel(const BatchTimer& time_batch, double sent_per_byte, int steps,
                const ProbeSizes& sizes, costmodel::LinkLevel* level, size_t* large_bytes) {
  double small = 0, large = 0;
  ZPP_CHECK(PerCall(time_batch, kSmallBytes, &small));
  size_t probe = kLargeBytes;
  for (;;) {
    ZPP_CHECK(PerCall(time_batch, probe, &large));
    // max_bytes is the same on every rank, so a growth agreed by all stays inside every buffer.
    const bool can_grow = probe * 4 <= sizes.max_bytes;
    const bool content = !can_grow || large >= kLargeOverSmall * small;
    bool grow = !content;
    if (sizes.agree) ZPP_CHECK(sizes.agree(content, &grow));
    if (!grow) break;
    probe *= 4;
  }
  if (large_bytes != nullptr) *large_bytes = probe;
  const double extra_bytes = sent_per_byte * static_cast<double>(probe - kSmallBytes);
  // A slope at or under zero (the small size as slow as the large): the link is faster than the
  // sizes can tell; its bandwidth is then what the large size moved in its whole time.
  const double slope = large > small ? (large - small) / extra_bytes
                                     : large / (sent_per_byte * static_cast<double>(probe));
  level->gbps = 8.0 / (slope * 1e9);
  const double fixed = small - slope * sent_per_byte * static_cast<double>(kSmallBytes);
  level->latency_us = std::max(0.0, fixed) * 1e6 / std::max(1, steps);
  return ncclSuccess;
}

namespace {

Result MeasureCodecs(Backend& backend, Stream& stream, costmodel::KernelThroughput* kernels) {
  const codec::Format format{8, codec::kDefaultBlock, false};
  const size_t raw = kCodecElements * sizeof(float);
  const size_t piece = zppPieceBytes(kCodecElements, ncclFloat32, format.bits, format.block);
  std::unique_ptr<DeviceMemory> tensor, pieces, output;
  ZPP_CHECK(backend.Allocate(raw, &tensor));
  ZPP_CHECK(backend.Allocate(2 * piece, &pieces));
  ZPP_CHECK(backend.Allocate(raw, &output));
  std::vector<float> host(kCodecElements);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 977) * 0.001f - 0.4f;
  ZPP_CHECK(backend.CopyFromHost(tensor->data(), host.data(), raw, stream));
  const codec::ConstTensorView input{tensor->data(), ncclFloat32, kCodecElements};
  const codec::TensorView out{output->data(), ncclFloat32, kCodecElements};
  const std::span<std::byte> both(static_cast<std::byte*>(pieces->data()), 2 * piece);
  double seconds = 0;
  ZPP_CHECK(Fastest(
      backend, stream,
      [&] {
        const Result first =
            backend.Quantize(input, format, codec::Rounding{}, both.first(piece), stream);
        if (first != ncclSuccess) return first;
        return backend.Quantize(input, format, codec::Rounding{}, both.subspan(piece), stream);
      },
      &seconds));
  kernels->quantize_gbps = 2.0 * static_cast<double>(raw + piece) / seconds / 1e9;
  ZPP_CHECK(Fastest(
      backend, stream,
      [&] {
        return backend.DequantizeBatch(both.first(piece), kCodecElements, codec::BatchMap{}, format,
                                       out, stream);
      },
      &seconds));
  kernels->dequantize_gbps = static_cast<double>(raw + piece) / seconds / 1e9;
  const codec::ReduceBatch sum{1, 2, 0, piece};  // one sum of two pieces
  ZPP_CHECK(Fastest(
      backend, stream,
      [&] {
        return backend.DequantizeReduceBatch(both, sum, kCodecElements, format, 1.0f, out, stream);
      },
      &seconds));
  kernels->reduce_gbps = static_cast<double>(2 * piece + raw) / seconds / 1e9;
  ZPP_CHECK(Fastest(
      backend, stream, [&] { return backend.Memcpy(output->data(), tensor->data(), raw, stream); },
      &seconds));
  kernels->copy_gbps = 2.0 * static_cast<double>(raw) / seconds / 1e9;
  return ncclSuccess;
}

constexpr size_t kFigures = 8;

std::array<double, kFigures> Flatten(const costmodel::ClusterModel& m) {
  return {m.intra.gbps,          m.intra.latency_us,      m.inter.gbps,
          m.inter.latency_us,    m.kernels.quantize_gbps, m.kernels.dequantize_gbps,
          m.kernels.reduce_gbps, m.kernels.copy_gbps};
}

}  // namespace

Result MeasureFigures(Backend& backend, Stream& stream, topology::ByteAllGather& exchange,
                      const plan::Shape& shape, costmodel::ClusterModel* model, bool* measured) {
  *measured = false;
  model->nodes = shape.nodes;
  model->gpus_per_node = shape.min_local_size;
  const int nodes = backend.GroupSize(GroupKind::kInterNode);
  const int local = backend.GroupSize(GroupKind::kIntraNode);
  // Buffers first, agreed: a rank that could not allocate must not leave the others waiting in
  // the collectives below. The largest probe's where there is room, else the smallest's; which
  // one every rank uses is agreed too.
  const size_t world = static_cast<size_t>(backend.world_size());
  std::unique_ptr<DeviceMemory> send, recv;
  ProbeSizes sizes;
  sizes.max_bytes = MaxProbeBytes(backend.world_size());
  const auto allocate = [&](size_t bytes, bool quiet) {
    send.reset();
    recv.reset();
    const auto take = [&](size_t size, std::unique_ptr<DeviceMemory>* out) {
      return (quiet ? backend.TryAllocate(size, out) : backend.Allocate(size, out)) == ncclSuccess;
    };
    return take(bytes, &send) && take(world * bytes, &recv);
  };
  const bool roomy = allocate(sizes.max_bytes, true);
  const bool allocated = roomy || allocate(kLargeBytes, false);
  topology::SetUpOutcome outcome;
  ZPP_CHECK(topology::AgreeOnOutcome(exchange, allocated, &outcome));
  if (!outcome.all_ok) {
    ZPP_WARN(
        "zpp: ZPP_TUNE=auto could not calibrate (%s: no memory for its buffers): the static "
        "rule decides on every rank (leave more device memory free for ZPP_TUNE=auto)",
        outcome.Describe().c_str());
    return ncclSuccess;
  }
  topology::SetUpOutcome room;
  ZPP_CHECK(topology::AgreeOnOutcome(exchange, roomy, &room));
  if (!room.all_ok) sizes.max_bytes = kLargeBytes;
  sizes.agree = [&exchange](bool content, bool* grow) {
    topology::SetUpOutcome all;
    ZPP_CHECK(topology::AgreeOnOutcome(exchange, content, &all));
    *grow = !all.all_ok;
    return ncclSuccess;
  };
  size_t intra_probe = 0, inter_probe = 0;
  // Hierarchical groups exist only on uniform layouts; elsewhere the world's collectives stand
  // for both levels.
  const bool levels = shape.hierarchical_allowed;
  if (!levels && world > 1) {
    const int ranks = backend.world_size();
    ZPP_CHECK(FitLevel(LevelTimer(backend, stream, GroupKind::kWorld, *send, *recv), ranks - 1,
                       ranks - 1, sizes, &model->intra, &intra_probe));
    model->inter = model->intra;
    model->inter.gbps *= shape.min_local_size;  // the model's inter level is a node's link
  }
  if (levels && local > 1) {
    ZPP_CHECK(FitLevel(LevelTimer(backend, stream, GroupKind::kIntraNode, *send, *recv), local - 1,
                       local - 1, sizes, &model->intra, &intra_probe));
  }
  if (levels && nodes > 1) {
    // All of a node's ranks gather at once through the node's link.
    ZPP_CHECK(FitLevel(LevelTimer(backend, stream, GroupKind::kInterNode, *send, *recv),
                       static_cast<double>(local) * (nodes - 1), nodes - 1, sizes, &model->inter,
                       &inter_probe));
  }
  ZPP_INFO(kTune, "bandwidth probes (per rank): intra %zu KiB, inter %zu KiB (at most %zu KiB)",
           intra_probe >> 10, inter_probe >> 10, sizes.max_bytes >> 10);
  // The codec's buffers are this rank's alone, and no collective follows before the figures'
  // exchange: a rank that fails here says so there.
  *measured = MeasureCodecs(backend, stream, &model->kernels) == ncclSuccess;
  return ncclSuccess;
}

Result AgreeOnFigures(topology::ByteAllGather& exchange, const costmodel::ClusterModel& mine,
                      bool measured, costmodel::ClusterModel* agreed, bool* all_measured) {
  std::array<double, kFigures + 1> figures{};
  const std::array<double, kFigures> flat = Flatten(mine);
  std::copy(flat.begin(), flat.end(), figures.begin());
  figures[kFigures] = measured ? 1.0 : 0.0;
  std::vector<std::byte> all(static_cast<size_t>(exchange.size()) * sizeof(figures));
  ZPP_CHECK(exchange.AllGather(std::as_bytes(std::span(figures)), all));
  std::array<double, kFigures + 1> slowest = figures;
  for (int r = 0; r < exchange.size(); ++r) {
    std::array<double, kFigures + 1> theirs;
    std::memcpy(theirs.data(), all.data() + static_cast<size_t>(r) * sizeof(theirs),
                sizeof(theirs));
    for (size_t i = 0; i <= kFigures; ++i) {
      const bool latency = i == 1 || i == 3;
      slowest[i] = latency ? std::max(slowest[i], theirs[i]) : std::min(slowest[i], theirs[i]);
    }
  }
  *all_measured = slowest[kFigures] > 0.5;
  *agreed = mine;
  agreed->intra = {slowest[0], slowest[1]};
  agreed->inter = {slowest[2], slowest[3]};
  agreed->kernels = {slowest[4], slowest[5], slowest[6], slowest[7]};
  return ncclSuccess;
}

Result SetUpTuning(Backend& backend, Stream& stream, topology::ByteAllGather& exchange,
                   const plan::Shape& shape, const plan::Settings& settings,
                   std::shared_ptr<const Tuning>* out) {
  out->reset();
  const auto start = std::chrono::steady_clock::now();
  costmodel::ClusterModel mine;
  bool measured = false;
  ZPP_CHECK(MeasureFigures(backend, stream, exchange, shape, &mine, &measured));
  auto tuning = std::make_shared<Tuning>();
  bool all_measured = false;
  ZPP_CHECK(AgreeOnFigures(exchange, mine, measured, &tuning->model, &all_measured));
  if (!all_measured) {
    ZPP_WARN(
        "zpp: ZPP_TUNE=auto: some rank could not measure its codecs: the static rule "
        "decides on every rank (ZPP_DEBUG=INFO shows why)");
    return ncclSuccess;
  }
  tuning->table = DecisionTable::Build(tuning->model, shape, settings);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ZPP_INFO(kTune, "calibrated in %.2f s, agreed (slowest of every rank): %s", seconds,
           DescribeFigures(tuning->model).c_str());
  ZPP_INFO(kTune, "decision by whole-buffer size: %s", tuning->table.Describe().c_str());
  *out = std::move(tuning);
  return ncclSuccess;
}

std::string DescribeFigures(const costmodel::ClusterModel& m) {
  char text[320];
  std::snprintf(text, sizeof(text),
                "%d node(s) x %d: intra %.3g Gbit/s + %.3g us, inter (a node's) %.3g Gbit/s + "
                "%.3g us; codec GB/s quantize %.3g, dequantize %.3g, reduce %.3g, copy %.3g",
                m.nodes, m.gpus_per_node, m.intra.gbps, m.intra.latency_us, m.inter.gbps,
                m.inter.latency_us, m.kernels.quantize_gbps, m.kernels.dequantize_gbps,
                m.kernels.reduce_gbps, m.kernels.copy_gbps);
  return text;
}

}  // namespace zpp::tune
