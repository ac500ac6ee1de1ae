#include "step/training_step.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>

#include "codec/codec.h"
#include "codec/element_io.h"
#include "common/hash.h"
#include "engine/engine.h"
#include "epoch/step_epoch.h"
#include "sim/sim_backend.h"
#include "step/caching_allocator.h"

namespace zpp::step {
namespace {

// The weight of element i of layer l's shard on `rank` in `step`: changes every step.
float Weight(int rank, size_t layer, int step, size_t i) {
  uint64_t h = (static_cast<uint64_t>(rank) << 40) ^ (layer << 24) ^ (uint64_t(step) << 56) ^ i;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<float>(static_cast<int64_t>(h % 2000001) - 1000000) * 1e-6f;
}

struct ErrorSum {
  std::mutex mutex;
  double error = 0;
  double reference = 0;
  void Add(double e, double r) {
    std::lock_guard<std::mutex> lock(mutex);
    error += e;
    reference += r;
  }
  double Relative() const { return reference == 0 ? 0 : std::sqrt(error / reference); }
};

}  // namespace

std::string_view InputBuffersName(InputBuffers buffers) {
  return buffers == InputBuffers::kFramework ? "framework" : "dedicated";
}

bool ParseInputBuffers(std::string_view name, InputBuffers* out) {
  for (InputBuffers b : {InputBuffers::kDedicated, InputBuffers::kFramework}) {
    if (name == InputBuffersName(b)) {
      *out = b;
      return true;
    }
  }
  return false;
}

namespace {

bool Selects(int selector, int rank) { return selector == kAllRanks || selector == rank; }

// Weight() as an optimizer moves it: step 0's, plus step_update x a value in [-1, 1] per step.
float UpdatedWeight(const TrainingSpec& spec, int rank, size_t layer, int step, size_t i) {
  if (spec.step_update == 0) return Weight(rank, layer, step, i);
  float value = Weight(rank, layer, 0, i);
  for (int s = 1; s <= step; ++s) value += spec.step_update * Weight(rank, layer, s, i);
  return value;
}

// The value of element i of `rank`'s shard of `layer` in `step`, as the replay sets it.
float ShardValue(const TrainingSpec& spec, int rank, size_t layer, int step, size_t i,
                 bool tampered) {
  const size_t count = spec.layer_counts[layer];
  if (tampered && layer == 0 && Selects(spec.tamper_rank, rank) && i + 1 == count) return 3.0f;
  const bool last = layer + 1 == spec.layer_counts.size() && layer != 0;
  if (spec.constant_until_step >= 0 && count == spec.layer_counts[0] &&
      (layer == 0 || (last && step < spec.constant_until_step))) {
    return 1.0f;
  }
  const bool twin = last && Selects(spec.twin_rank, rank) && count == spec.layer_counts[0] &&
                    (spec.twin_step < 0 || step == spec.twin_step);
  return UpdatedWeight(spec, rank, twin ? 0 : layer, step, i);
}

// What the ranks' replays add up, each rank its own share (steps end at different times on
// different ranks), read into the result once every rank has finished.
struct ClusterTally {
  ClusterTally(int steps, int ranks)
      : off_node_bytes(steps),
        step_hits(steps),
        rank0_off_node_bytes(steps),
        step_weights(steps),
        digests(ranks),
        kept_peaks(ranks),
        nan_outputs(ranks),
        stale_outputs(ranks) {}
  void Into(TrainingResult& result, uint64_t host_synchronizations) const;

  std::vector<std::atomic<uint64_t>> off_node_bytes, step_hits;  // per step
  std::vector<double> rank0_off_node_bytes;                      // per step
  std::vector<ErrorSum> step_weights;                            // per step
  std::vector<uint64_t> digests, kept_peaks;                     // per rank
  std::vector<int> nan_outputs, stale_outputs;                   // per rank
  ErrorSum weights, gradients;
  std::atomic<uint64_t> hits{0}, failures_reported{0}, delta_calls{0}, delta_full{0};
  std::atomic<uint64_t> harness_syncs{0}, host_waits{0};
  std::atomic<int> failures{0}, mismatches{0};
  std::atomic<size_t> order_violations{0}, allocator_blocks{0};
  std::mutex order_mutex;
  std::string first_order_violation;
};

void ClusterTally::Into(TrainingResult& result, uint64_t host_synchronizations) const {
  result.off_node_bytes_per_step = rank0_off_node_bytes;
  for (size_t step = 0; step < off_node_bytes.size(); ++step) {
    result.cluster_off_node_bytes_per_step[step] = static_cast<double>(off_node_bytes[step].load());
    result.hits_per_step.push_back(step_hits[step].load());
    result.weight_rel_l2_per_step.push_back(step_weights[step].Relative());
  }
  result.nan_outputs_per_rank = nan_outputs;
  result.stale_outputs_per_rank = stale_outputs;
  for (size_t r = 0; r < digests.size(); ++r) {
    result.nan_outputs += nan_outputs[r];
    result.stale_outputs += stale_outputs[r];
    result.output_digest = HashCombine(result.output_digest, digests[r]);
  }
  result.ranks_gathered_alike =
      std::all_of(digests.begin(), digests.end(), [&](uint64_t d) { return d == digests[0]; });
  result.weight_rel_l2 = weights.Relative();
  result.gradient_rel_l2 = gradients.Relative();
  result.delta_calls = delta_calls;
  result.delta_full = delta_full;
  result.hits = hits;
  result.verify_failures = failures_reported;
  result.hpz_kept_bytes_peak = *std::max_element(kept_peaks.begin(), kept_peaks.end());
  result.backward_mismatches = mismatches;
  result.failures = failures;
  result.engine_host_syncs = host_synchronizations - harness_syncs.load();
  result.stats_host_waits = host_waits.load();
  result.stream_order_violations = order_violations.load();
  result.first_stream_order_violation = first_order_violation;
  result.allocator_blocks = allocator_blocks;
}

// One rank's replay of the spec's steps on its own engine, adding what it sees to the tally.
class RankReplay {
 public:
  RankReplay(const TrainingSpec& spec, sim::SimWorld& world, sim::SimBackend& backend,
             ClusterTally& tally)
      : spec_(spec),
        world_(world),
        backend_(backend),
        tally_(tally),
        rank_(backend.rank()),
        ranks_(spec.layout.world_size()),
        element_(NcclTypeBytes(spec.dtype)),
        layers_(spec.layer_counts.size()),
        shards_(layers_),
        first_(layers_),
        gathered_(layers_) {}

  void Run() {
    if (!SetUp()) {
      ++tally_.failures;
      return;
    }
    for (step_ = 0; step_ < spec_.steps; ++step_) {
      BeginStep();
      for (int micro = 0; micro < spec_.micro_batches; ++micro) MicroBatch(micro);
      EndStep();
    }
    Finish();
  }

 private:
  bool SetUp();
  void BeginStep();
  void MicroBatch(int micro);
  void EndStep();
  void Finish();
  void RunGather(size_t l, std::vector<uint8_t>& out);
  void Gather(size_t l);
  void CompareWithTheExactWeights(size_t l, const std::vector<float>& got);
  void ReduceScatter(size_t l);

  const TrainingSpec& spec_;
  sim::SimWorld& world_;
  sim::SimBackend& backend_;
  ClusterTally& tally_;
  const int rank_;
  const int ranks_;
  const size_t element_;
  const size_t layers_;
  StepEpoch epoch_;
  StatsCounters stats_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<Stream> forward_stream_, backward_stream_, scatter_stream_;
  // The stream each phase runs on: one for all, or FSDP2's own for each.
  Stream* stream_ = nullptr;
  Stream* backward_ = nullptr;
  Stream* scatter_ = nullptr;
  CachingAllocator allocator_;
  std::vector<std::vector<uint8_t>> shards_;
  std::vector<std::vector<uint8_t>> first_;  // each layer's first output in the step
  std::vector<bool> gathered_;
  std::vector<uint8_t> output_, gradient_in_, gradient_out_;
  uint64_t last_off_node_ = 0;
  uint64_t last_hits_ = 0;
  int step_ = 0;
  bool tampered_ = false;
  TrainingPass pass_ = TrainingPass::kForward;  // of the gathers issued now
};

bool RankReplay::SetUp() {
  engine::EngineOptions options;
  options.settings = spec_.settings;
  options.hpz_max_bytes = spec_.hpz_max_bytes;
  options.epoch = [this] { return epoch_.Current(); };
  backend_.EnableStreamOrderCheckForTesting();  // before the engine allocates anything
  engine_ = std::make_unique<engine::Engine>(backend_, sim::ShapeOf(spec_.layout), options, stats_);
  if (engine_->Prepare() != ncclSuccess || backend_.CreateStream(&forward_stream_) != ncclSuccess ||
      backend_.CreateStream(&backward_stream_) != ncclSuccess ||
      backend_.CreateStream(&scatter_stream_) != ncclSuccess) {
    return false;
  }
  stream_ = forward_stream_.get();
  backward_ = spec_.phase_streams ? backward_stream_.get() : stream_;
  scatter_ = spec_.phase_streams ? scatter_stream_.get() : stream_;
  if (rank_ == spec_.host_allocation_fails_rank) backend_.SetHostAllocationFailsForTesting(true);
  if (rank_ == spec_.event_creation_fails_rank) backend_.SetEventCreationFailsForTesting(true);
  for (size_t l = 0; l < layers_; ++l) shards_[l].resize(spec_.layer_counts[l] * element_);
  return true;
}

void RankReplay::RunGather(size_t l, std::vector<uint8_t>& out) {
  const size_t count = spec_.layer_counts[l];
  const size_t bytes = count * ranks_ * element_;
  void* input = shards_[l].data();
  std::byte* block = nullptr;
  if (spec_.buffers == InputBuffers::kFramework) {
    // FSDP2: a fresh output block, the shard copied into this rank's slice, gathered in place.
    block = allocator_.Allocate(bytes);
    std::byte* slice = block + rank_ * count * element_;
    backend_.Launch(*stream_, [this, slice, l, count] {
      std::memcpy(slice, shards_[l].data(), count * element_);
    });
    input = slice;
  } else {
    out.assign(bytes, 0);
  }
  void* recv = block != nullptr ? static_cast<void*>(block) : out.data();
  if (engine_->AllGather({input, recv, count, spec_.dtype, pass_}, *stream_) != ncclSuccess) {
    ++tally_.failures;
  }
  backend_.Synchronize(*stream_);
  ++tally_.harness_syncs;
  if (block != nullptr) {
    out.assign(reinterpret_cast<uint8_t*>(block), reinterpret_cast<uint8_t*>(block) + bytes);
    allocator_.Free(block, bytes);
  }
}

// One gather of layer l, checked against the exact current weights of every rank.
void RankReplay::Gather(size_t l) {
  RunGather(l, output_);
  uint64_t fingerprint = 0;
  codec::Fingerprint({reinterpret_cast<const std::byte*>(output_.data()), output_.size()},
                     &fingerprint);
  tally_.digests[rank_] = HashCombine(tally_.digests[rank_], fingerprint);
  std::vector<float> got(spec_.layer_counts[l] * ranks_);
  codec::LoadElements(output_.data(), spec_.dtype, 0, got.size(), got.data());
  if (std::any_of(got.begin(), got.end(), [](float v) { return std::isnan(v); })) {
    ++tally_.nan_outputs[rank_];
    return;
  }
  if (!gathered_[l]) {
    gathered_[l] = true;
    first_[l] = output_;
  } else if (output_ != first_[l]) {
    ++tally_.mismatches;
  }
  CompareWithTheExactWeights(l, got);
}

void RankReplay::CompareWithTheExactWeights(size_t l, const std::vector<float>& got) {
  const size_t count = spec_.layer_counts[l];
  const bool lossless = !spec_.settings.qwz;
  double e = 0, r = 0;
  bool stale = false;
  for (int src = 0; src < ranks_; ++src) {
    for (size_t i = 0; i < count; ++i) {
      float exact_f = ShardValue(spec_, src, l, step_, i, tampered_);
      uint8_t held[4];
      codec::StoreElements(held, spec_.dtype, 0, 1, &exact_f);
      float exact = 0;
      codec::LoadElements(held, spec_.dtype, 0, 1, &exact);
      const float value = got[src * count + i];
      stale |= lossless && value != exact;
      e += (value - exact) * (value - exact);
      r += exact * exact;
    }
  }
  if (stale) ++tally_.stale_outputs[rank_];
  tally_.weights.Add(e, r);
  tally_.step_weights[step_].Add(e, r);
}

void RankReplay::ReduceScatter(size_t l) {
  const size_t count = spec_.layer_counts[l];
  std::vector<float> grads(count * ranks_);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = Weight(rank_ + 7, l, step_, i);
  gradient_in_.resize(count * ranks_ * element_);
  gradient_out_.assign(count * element_, 0);
  codec::StoreElements(gradient_in_.data(), spec_.dtype, 0, grads.size(), grads.data());
  if (engine_->ReduceScatter({gradient_in_.data(), gradient_out_.data(), count, spec_.dtype,
                              plan::Reduction::kSum, 1.0f},
                             *scatter_) != ncclSuccess) {
    ++tally_.failures;
  }
  backend_.Synchronize(*scatter_);
  ++tally_.harness_syncs;
  double e = 0, r = 0;
  for (size_t i = 0; i < count; ++i) {
    double exact = 0;
    for (int src = 0; src < ranks_; ++src) {
      float g = Weight(src + 7, l, step_, rank_ * count + i);
      uint8_t held[4];
      codec::StoreElements(held, spec_.dtype, 0, 1, &g);
      codec::LoadElements(held, spec_.dtype, 0, 1, &g);
      exact += g;
    }
    float got = 0;
    codec::LoadElements(gradient_out_.data(), spec_.dtype, i, 1, &got);
    e += (got - exact) * (got - exact);
    r += exact * exact;
  }
  tally_.gradients.Add(e, r);
}

// The step's weights into the shards (and the damaged reference the spec asks for).
void RankReplay::BeginStep() {
  tampered_ = false;
  if (rank_ == spec_.damage_reference_rank && step_ == spec_.damage_reference_step) {
    const int nodes = backend_.GroupSize(GroupKind::kInterNode);
    const int other = (backend_.GroupRank(GroupKind::kInterNode) + 1) % nodes;
    engine::WeightDeltas* deltas = engine_->deltas_for_testing();
    if (deltas == nullptr ||
        !deltas->DamageReferenceForTesting(0, other * spec_.layer_counts[0] * element_)) {
      ++tally_.failures;  // the test expected a reference there
    }
  }
  for (size_t l = 0; l < layers_; ++l) {
    std::vector<float> values(spec_.layer_counts[l]);
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = ShardValue(spec_, rank_, l, step_, i, false);
    }
    codec::StoreElements(shards_[l].data(), spec_.dtype, 0, values.size(), values.data());
    gathered_[l] = false;
  }
}

// Forward gathers (with the spec's extra one and its tampering), backward gathers (without the
// ones it leaves out), then the gradients' reduce-scatters.
void RankReplay::MicroBatch(int micro) {
  stream_ = forward_stream_.get();
  pass_ = TrainingPass::kForward;
  for (size_t l = 0; l < layers_; ++l) Gather(l);
  if (micro == 0 && step_ == spec_.extra_gather_step) Gather(spec_.extra_gather_layer);
  if (micro == 0 && step_ == spec_.tamper_step) {
    tampered_ = true;
    if (Selects(spec_.tamper_rank, rank_)) {
      const size_t last = spec_.layer_counts[0] - 1;
      const float value = ShardValue(spec_, rank_, 0, step_, last, true);
      codec::StoreElements(shards_[0].data(), spec_.dtype, last, 1, &value);
    }
    // The tampered layer's later outputs are compared with the exact weights only.
    gathered_[0] = false;
  }
  stream_ = backward_;
  pass_ = TrainingPass::kBackward;
  for (size_t l = layers_; l-- > 0;) {
    if (micro == 0 && step_ == spec_.missing_gather_step && l == spec_.missing_gather_layer) {
      continue;
    }
    if (static_cast<int>(l) == spec_.unsharded_layer) continue;
    Gather(l);
  }
  for (size_t l = layers_; l-- > 0;) ReduceScatter(l);
}

void RankReplay::EndStep() {
  if (step_ + 1 <= spec_.advance_epoch_steps) epoch_.Advance();
  const uint64_t off_node =
      world_.SentBytes(rank_, zppLinkInterNode) + world_.SentBytes(rank_, zppLinkInterRack);
  if (rank_ == 0) tally_.rank0_off_node_bytes[step_] = double(off_node - last_off_node_);
  tally_.off_node_bytes[step_] += off_node - last_off_node_;
  last_off_node_ = off_node;
  zppStats_t now{};
  stats_.Snapshot(&now);
  tally_.step_hits[step_] += now.hpz_hits - last_hits_;
  last_hits_ = now.hpz_hits;
}

void RankReplay::Finish() {
  engine_->PollDeviceErrors();
  zppStats_t snapshot{};
  stats_.Snapshot(&snapshot);
  tally_.hits += snapshot.hpz_hits;
  tally_.failures_reported += snapshot.hpz_verify_failures;
  tally_.delta_calls += snapshot.qwz_delta_calls;
  tally_.delta_full += snapshot.qwz_delta_full;
  tally_.kept_peaks[rank_] = snapshot.hpz_kept_bytes_peak;
  tally_.host_waits += snapshot.host_waits;
  const sim::StreamOrderChecker& order = *backend_.stream_order();
  tally_.order_violations += order.violation_count();
  if (order.violation_count() != 0) {
    std::lock_guard<std::mutex> lock(tally_.order_mutex);
    if (tally_.first_order_violation.empty()) {
      tally_.first_order_violation = order.violations().front();
    }
  }
  if (rank_ == 0) tally_.allocator_blocks = allocator_.blocks();
}

}  // namespace

TrainingResult RunTraining(const TrainingSpec& spec) {
  const int n = spec.layout.world_size();
  const size_t element = NcclTypeBytes(spec.dtype);
  size_t model_shard_bytes = 0;
  for (size_t count : spec.layer_counts) model_shard_bytes += count * element;
  const plan::Shape shape = sim::ShapeOf(spec.layout);
  TrainingResult result;
  result.plain_gather_bytes = static_cast<double>((shape.nodes - 1) * model_shard_bytes);
  result.cluster_plain_gather_bytes = n * result.plain_gather_bytes;
  result.cluster_off_node_bytes_per_step.assign(spec.steps, 0);
  ClusterTally tally(spec.steps, n);
  sim::SimWorld world(spec.layout);
  world.RunRanks([&](sim::SimBackend& backend) {
    RankReplay replay(spec, world, backend, tally);
    replay.Run();
  });
  tally.Into(result, world.host_synchronizations());
  return result;
}

namespace {

double SteadyMean(const std::vector<double>& per_step, int first_steady_step) {
  double sum = 0;
  int steps = 0;
  for (size_t s = static_cast<size_t>(first_steady_step); s < per_step.size(); ++s, ++steps) {
    sum += per_step[s];
  }
  return steps == 0 ? 0 : sum / steps;
}

}  // namespace

double SteadyRelativeVolume(const TrainingResult& result, bool cluster, int first_steady_step) {
  const double unit = cluster ? result.cluster_plain_gather_bytes : result.plain_gather_bytes;
  if (unit == 0) return 0;
  const auto& per_step =
      cluster ? result.cluster_off_node_bytes_per_step : result.off_node_bytes_per_step;
  return SteadyMean(per_step, first_steady_step) / unit;
}

double SteadyClusterBytesPerStep(const TrainingResult& result, int first_steady_step) {
  return SteadyMean(result.cluster_off_node_bytes_per_step, first_steady_step);
}

}  // namespace zpp::step
