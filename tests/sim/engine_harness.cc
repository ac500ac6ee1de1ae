#include "engine_harness.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <random>

#include "codec/element_io.h"
#include "engine/engine.h"
#include "sim/sim_backend.h"

namespace zpp::test {

plan::Settings TechniquesOn(bool qwz, bool hpz, bool qgz) {
  plan::Settings s;
  s.qwz = qwz;
  s.hpz = hpz;
  s.qgz = qgz;
  s.min_bytes = 0;
  return s;
}

std::vector<MatrixMode> MatrixModes() {
  auto make = [](bool qwz, int qwz_bits, bool hpz, bool qgz, int intra, int inter) {
    plan::Settings s = TechniquesOn(qwz, hpz, qgz);
    s.qwz_bits = qwz_bits;
    s.qgz_bits_intra = intra;
    s.qgz_bits_inter = inter;
    return s;
  };
  return {
      {"plain", make(false, 8, false, false, 8, 4)},  {"qwz8", make(true, 8, false, false, 8, 4)},
      {"qwz4", make(true, 4, false, false, 8, 4)},    {"hpz", make(false, 8, true, false, 8, 4)},
      {"qwz8_hpz", make(true, 8, true, false, 8, 4)}, {"qgz8_4", make(false, 8, false, true, 8, 4)},
      {"qgz8_8", make(false, 8, false, true, 8, 8)},  {"qgz4_4", make(false, 8, false, true, 4, 4)},
  };
}

double ElementAt(const std::vector<uint8_t>& bytes, ncclDataType_t dtype, size_t i) {
  float value = 0;
  codec::LoadElements(bytes.data(), dtype, i, 1, &value);
  return value;
}

CollectiveRun RunCollective(const sim::ClusterLayout& layout, const plan::Shape& shape,
                            const plan::Settings& settings, const CollectiveSpec& spec) {
  sim::SimWorld world(layout);
  return RunCollective(world, shape, settings, spec);
}

CollectiveRun RunCollective(sim::SimWorld& world, const plan::Shape& shape,
                            const plan::Settings& settings, const CollectiveSpec& spec) {
  const int n = world.world_size();
  const size_t element = NcclTypeBytes(spec.dtype);
  const bool gather = spec.op == plan::CollectiveOp::kAllGather;
  const bool all_reduce = spec.op == plan::CollectiveOp::kAllReduce;
  const size_t in_count = gather || all_reduce ? spec.count : spec.count * n;
  const size_t out_count = gather ? spec.count * n : spec.count;

  CollectiveRun run;
  run.output.resize(n);
  run.input.resize(n);
  std::vector<plan::Plan> plans(n);
  std::atomic<int> failures{0};
  world.ResetCounters();
  const uint64_t syncs_before = world.host_synchronizations();
  int hosted = 0;
  for (int r = 0; r < n; ++r) hosted += world.Hosts(r) ? 1 : 0;
  StatsCounters stats;
  world.RunRanks([&](sim::SimBackend& backend) {
    const int rank = backend.rank();
    std::mt19937_64 rng(spec.seed * 7919u + rank);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(in_count);
    for (float& v : values) v = normal(rng);
    for (const auto& [nan_rank, nan_element] : spec.nan_inputs) {
      if (nan_rank == rank) values.at(nan_element) = std::numeric_limits<float>::quiet_NaN();
    }
    // Inputs and outputs where NCCL puts them, in-place layouts included.
    std::vector<uint8_t> in_storage(in_count * element + 1);
    std::vector<uint8_t> out_storage(std::max(in_count, out_count) * element + 1, 0xEE);
    void* send = in_storage.data();
    std::byte* recv = reinterpret_cast<std::byte*>(out_storage.data());
    if (spec.in_place && gather) send = recv + rank * spec.count * element;
    if (spec.in_place && all_reduce) send = recv;
    if (spec.in_place && !gather && !all_reduce) {
      send = recv;
      recv += rank * spec.count * element;
    }
    codec::StoreElements(send, spec.dtype, 0, in_count, values.data());
    run.input[rank].resize(in_count);
    for (size_t i = 0; i < in_count; ++i) {
      float held = 0;
      codec::LoadElements(send, spec.dtype, i, 1, &held);
      run.input[rank][i] = held;
    }

    engine::EngineOptions options;
    options.settings = settings;
    engine::Engine engine(backend, shape, options, stats);
    std::unique_ptr<Stream> stream;
    if (backend.CreateStream(&stream) != ncclSuccess) {
      ++failures;
      return;
    }
    std::vector<uint8_t> device_scalar(4);  // the sim's device memory is host memory
    codec::StoreElements(device_scalar.data(), spec.dtype, 0, 1, &spec.premul);
    Result result;
    const void* premul_device = spec.premul_on_device ? device_scalar.data() : nullptr;
    if (gather) {
      result = engine.AllGather({send, recv, spec.count, spec.dtype}, *stream, &plans[rank]);
    } else if (all_reduce) {
      result = engine.AllReduce(
          {send, recv, spec.count, spec.dtype, spec.reduction, spec.premul, premul_device}, *stream,
          &plans[rank]);
    } else {
      result = engine.ReduceScatter(
          {send, recv, spec.count, spec.dtype, spec.reduction, spec.premul, premul_device}, *stream,
          &plans[rank]);
    }
    if (result != ncclSuccess) ++failures;
    backend.Synchronize(*stream);
    const auto* first = reinterpret_cast<const uint8_t*>(recv);
    run.output[rank].assign(first, first + out_count * element);
  });
  run.failures = failures.load();
  run.host_syncs = world.host_synchronizations() - syncs_before - hosted;
  bool first = true;
  for (int r = 0; r < n; ++r) {
    if (!world.Hosts(r)) continue;
    if (first) run.plan = plans[r];
    first = false;
    run.plans_agree &= plans[r].kind == run.plan.kind && plans[r].reason == run.plan.reason;
  }
  for (int r = 0; r < n; ++r) {
    std::array<uint64_t, zppNumLinks> sent{};
    for (int link = 0; link < zppNumLinks; ++link) {
      sent[link] = world.SentBytes(r, static_cast<zppLink_t>(link));
    }
    run.sent_bytes.push_back(sent);
    run.off_node_bytes.push_back(world.SentBytes(r, zppLinkInterNode) +
                                 world.SentBytes(r, zppLinkInterRack));
    run.inter_rack_bytes.push_back(world.SentBytes(r, zppLinkInterRack));
  }
  return run;
}

}  // namespace zpp::test
