#!/usr/bin/env bash
# make mutants: breaks zpp's key contracts on purpose, one named mutation at a time, and checks
# that the tests meant to guard each contract fail. A test earns its place by failing when the
# feature breaks (docs/architecture.md, "How the contracts are tested"); this is that check, automated.
#
# For each mutation: replace its exact original text in its file (every occurrence), rebuild only
# the test binaries it names (incremental, in build-mutants/, CUDA off: every mutation here is
# host code), run them with their gtest filters under a per-binary timeout, stop at the first
# binary that fails, and restore the file (always: a trap restores it on any exit). A mutation
# whose text is no longer in its file stops the run before anything is built, "mutation no longer
# applies": the code moved, update the list. Prints a table and writes it to
# bench/results/mutants.md; exits 1 when a mutation survived (no test failed), 2 on a broken list
# or build.
#
# Not part of `make test`: it rebuilds some 25 times (about 20 minutes on 2 cores).
#   tools/mutants.sh                  # every mutation
#   MUTANTS_ONLY='^fence' tools/mutants.sh   # the mutations whose name matches a regex
# Environment: MUTANTS_BUILD (build folder), MUTANTS_TIMEOUT (seconds per test binary, 180),
# MUTANTS_REPORT (the table's file; the default only for a full run), JOBS (build jobs).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${MUTANTS_BUILD:-$ROOT/build-mutants}
TIMEOUT=${MUTANTS_TIMEOUT:-180}
ONLY=${MUTANTS_ONLY:-}
REPORT=${MUTANTS_REPORT:-}
[[ -z $REPORT && -z $ONLY ]] && REPORT=$ROOT/bench/results/mutants.md
JOBS=${JOBS:-$(nproc)}

NAMES=() FILES=() ORIGINALS=() REPLACEMENTS=() TESTS=()
# mutant NAME FILE ORIGINAL REPLACEMENT "BINARY=GTEST_FILTER[@SECONDS] ..." (binaries tried in
# order; @SECONDS a timeout of its own, for a mutation that turns a failure into a hang);
# BINARY ctest runs the ctest test named FILTER (the torch backend's Python tests)
mutant() {
  NAMES+=("$1") FILES+=("$2") ORIGINALS+=("$3") REPLACEMENTS+=("$4") TESTS+=("$5")
}

# ---- The list. Grouped by file, so that consecutive builds recompile little. ----

# Fence (src/fence/epoch_fence.cc): a write waits for the last write and every read since;
# a read waits for the last write.
mutant fence-write-after-write src/fence/epoch_fence.cc \
  $'  ZPP_CHECK(WaitFor(stream, last_write_));\n  for (const StreamEvent& read' \
  $'  for (const StreamEvent& read' \
  "zpp_fence_tests=EpochFence*:BufferPool* zpp_fence_staging_tests=*"
mutant fence-write-after-read src/fence/epoch_fence.cc \
  $'  for (const StreamEvent& read : reads_) ZPP_CHECK(WaitFor(stream, read));\n' \
  '' \
  "zpp_fence_tests=*"
mutant fence-read-after-write src/fence/epoch_fence.cc \
  '  return WaitFor(stream, last_write_);' \
  '  return WaitFor(stream, StreamEvent{});' \
  "zpp_fence_tests=*"
# Past the events reserved at set-up, uses chain on the shared event (issue 25, item 5): a record
# on it follows its previous record.
mutant fence-shared-event-chain src/fence/fence_events.cc \
  '  if (shared_recorded_ && !shared_stream_.SameAs(stream.identity())) {' \
  '  if (false) {' \
  "zpp_fence_tests=*Chained*"
# The staging buffers' own fence (issue 17, item 1).
mutant fence-staging src/engine/plan_context.cc \
  $'  ZPP_CHECK(lease.fence().BeginWrite(context_.stream));\n' \
  '' \
  "zpp_fence_staging_tests=*"
# ZPP_FENCE reaching the engine (item 2).
mutant fence-config-switch src/engine/engine.cc \
  'options.fence_enabled = config.fence != 0;' \
  'options.fence_enabled = true;' \
  "zpp_fence_staging_tests=*"

# hpZ (src/engine/hpz_cache.cc; the hit's choice of its partition, which verifies it, in
# src/codec/math/hpz_select_math.h and the sim's src/codec/hpz_select.cc; the step guard in
# tools/zpp_python/zpp_step_guard.py).
# The bound holds at its edges (a partition that exactly fits stays).
mutant hpz-bound-edge src/engine/hpz_cache.cc \
  '  if (kept_bytes() + secondary_bytes > max_bytes_) return ncclSuccess;' \
  '  if (kept_bytes() + secondary_bytes >= max_bytes_) return ncclSuccess;' \
  "zpp_sim_tests=Hpz*"
mutant hpz-bound-partition-edge src/engine/hpz_cache.cc \
  '  if (fill->lease && kept_bytes() + fill->lease.size() > max_bytes_) fill->lease = BufferLease();' \
  '  if (fill->lease && kept_bytes() + fill->lease.size() >= max_bytes_) fill->lease = BufferLease();' \
  "zpp_sim_tests=Hpz*"
# Pairing (issue 44): a backward gather pairs with the latest unpaired forward fill of its shape;
# only backward gathers pair; a forward pass after a backward releases the last one's fills.
mutant hpz-pair-latest src/engine/hpz_cache.cc \
  $'  const int fill = waiting->second.back();\n  waiting->second.pop_back();' \
  $'  const int fill = waiting->second.front();\n  waiting->second.erase(waiting->second.begin());' \
  "zpp_sim_tests=Hpz*"
mutant hpz-pair-backward-only src/engine/hpz_cache.cc \
  '  int root = pass == TrainingPass::kBackward ? PairedFill(shape) : -1;' \
  '  int root = pass != TrainingPass::kUnknown ? PairedFill(shape) : -1;' \
  "zpp_sim_tests=Hpz*"
mutant hpz-new-forward-pass src/engine/hpz_cache.cc \
  $'    kept_.clear();\n    unpaired_.clear();\n  }' \
  $'  }' \
  "zpp_sim_tests=HpzMemory*:HpzFramework*"
# The one host wait on the collective path is counted for the user (issue 25, item 6).
mutant hpz-host-waits-counted src/engine/hpz_cache.cc \
  '  stats_.AddHostWait();' \
  '' \
  "zpp_sim_tests=Hpz*"
# hpZ's own buffers under the fence (issue 25, item 4): the epoch record's buffers written on
# their fences' exclusive side, and a fresh fingerprint lease claimed exclusively before the
# calls write their slots, all taken out (as before the fix). Either alone orders the test's
# streams (the claim's waits cover the record's buffer there), so they go out together.
mutant hpz-own-buffers-fenced src/engine/hpz_cache.cc \
  $'  ZPP_CHECK(record_send_.fence().BeginWrite(stream));\n  ZPP_CHECK(records_.fence().BeginWrite(stream));\n  // The fingerprints\' exclusive side: after every call\'s slot and every hit\'s choice, on every\n  // stream, so the counters copied below hold the whole epoch\'s.\n  ZPP_CHECK(fingerprints_.fence().BeginWrite(stream));\n  ZPP_CHECK(backend_.ReusePattern(nullptr, 0, decisions_hash_, nullptr,\n                                  reinterpret_cast<uint64_t*>(send), stream));\n  ZPP_CHECK(fingerprints_.fence().EndWrite(stream));\n  ZPP_CHECK(backend_.Memcpy(send + offsetof(EpochRecord, failures),\n                            Counters() + codec::kHpzFailuresCounter, 2 * sizeof(uint32_t), stream));\n  ZPP_CHECK(\n      backend_.AllGather(send, records_.data(), sizeof(EpochRecord), GroupKind::kWorld, stream));\n  ZPP_CHECK(record_send_.fence().EndWrite(stream));\n  ZPP_CHECK(records_.fence().EndWrite(stream));\n  ZPP_CHECK(backend_.RecordEvent(*exchange_done_, stream));\n  exchange_pending_ = true;\n  exchanged_epoch_ = epoch_;\n  return ncclSuccess;\n}\n\nResult HpzCache::UsesEnded(bool* ended) {\n  *ended = true;\n  return exchange_done_ ? backend_.EventReached(*exchange_done_, ended) : ncclSuccess;\n}\n\nResult HpzCache::Prepare() {\n  if (!counters_) {\n    ZPP_CHECK(backend_.AllocateHostVisible(2 * sizeof(uint32_t), &counters_));\n    std::memset(counters_->data(), 0, 2 * sizeof(uint32_t));  // no device work has it yet\n  }\n  if (!exchange_done_) ZPP_CHECK(backend_.CreateEvent(&exchange_done_));\n  return ncclSuccess;\n}\n\nResult HpzCache::StartEpoch(PlanContext& context, uint64_t epoch) {\n  ZPP_CHECK(Prepare());  // made at set-up by a communicator; nothing happens here then\n  size_t slots = kMinSlots;\n  if (started_) {\n    // The exchange of the previous advance has completed long since.\n    ZPP_CHECK(ReadPreviousRecord());\n    slots = std::max(slots, 2 * static_cast<size_t>(calls_));\n  }\n  // Taken before the exchange below is enqueued: a pool that refuses it (alike on every rank)\n  // fails the call before any collective. Its fence orders it after its earlier users.\n  BufferLease fingerprints;\n  ZPP_CHECK(context.pool.Take(slots * sizeof(uint64_t), &fingerprints));\n  // The calls write their slots under the fence\'s shared side (AllGather), which waits for the\n  // last write only: an exclusive use first orders them after every earlier user of these\n  // bytes, readers included (a dropped partition that a hit on another stream still reads).\n  ZPP_CHECK(fingerprints.fence().BeginWrite(context.stream));\n  ZPP_CHECK(fingerprints.fence().EndWrite(context.stream));' \
  $'  // The fingerprints\' exclusive side: after every call\'s slot and every hit\'s choice, on every\n  // stream, so the counters copied below hold the whole epoch\'s.\n  ZPP_CHECK(fingerprints_.fence().BeginWrite(stream));\n  ZPP_CHECK(backend_.ReusePattern(nullptr, 0, decisions_hash_, nullptr,\n                                  reinterpret_cast<uint64_t*>(send), stream));\n  ZPP_CHECK(fingerprints_.fence().EndWrite(stream));\n  ZPP_CHECK(backend_.Memcpy(send + offsetof(EpochRecord, failures),\n                            Counters() + codec::kHpzFailuresCounter, 2 * sizeof(uint32_t), stream));\n  ZPP_CHECK(\n      backend_.AllGather(send, records_.data(), sizeof(EpochRecord), GroupKind::kWorld, stream));\n  ZPP_CHECK(backend_.RecordEvent(*exchange_done_, stream));\n  exchange_pending_ = true;\n  exchanged_epoch_ = epoch_;\n  return ncclSuccess;\n}\n\nResult HpzCache::UsesEnded(bool* ended) {\n  *ended = true;\n  return exchange_done_ ? backend_.EventReached(*exchange_done_, ended) : ncclSuccess;\n}\n\nResult HpzCache::Prepare() {\n  if (!counters_) {\n    ZPP_CHECK(backend_.AllocateHostVisible(2 * sizeof(uint32_t), &counters_));\n    std::memset(counters_->data(), 0, 2 * sizeof(uint32_t));  // no device work has it yet\n  }\n  if (!exchange_done_) ZPP_CHECK(backend_.CreateEvent(&exchange_done_));\n  return ncclSuccess;\n}\n\nResult HpzCache::StartEpoch(PlanContext& context, uint64_t epoch) {\n  ZPP_CHECK(Prepare());  // made at set-up by a communicator; nothing happens here then\n  size_t slots = kMinSlots;\n  if (started_) {\n    // The exchange of the previous advance has completed long since.\n    ZPP_CHECK(ReadPreviousRecord());\n    slots = std::max(slots, 2 * static_cast<size_t>(calls_));\n  }\n  // Taken before the exchange below is enqueued: a pool that refuses it (alike on every rank)\n  // fails the call before any collective. Its fence orders it after its earlier users.\n  BufferLease fingerprints;\n  ZPP_CHECK(context.pool.Take(slots * sizeof(uint64_t), &fingerprints));\n  // The calls write their slots under the fence\'s shared side (AllGather), which waits for the\n  // last write only: an exclusive use first orders them after every earlier user of these\n  // bytes, readers included (a dropped partition that a hit on another stream still reads).' \
  "zpp_sim_tests=HpzStreamOrder*"
# Every hit sends the paired partition, unverified.
mutant hpz-verification src/codec/math/hpz_select_math.h \
  '    if (*candidates.fingerprint[i] == now) return static_cast<int>(i);' \
  '    if (*candidates.fingerprint[i] != now + 1) return static_cast<int>(i);' \
  "zpp_sim_hpz_fingerprint_tests=* zpp_sim_tests=Hpz*"
# A hit that matches nothing counts a failure but sends the paired (stale) partition.
mutant hpz-poisoning src/codec/hpz_select.cc \
  '    std::memset(send.data(), kHpzPoisonByte, send.size());' \
  '    std::memcpy(send.data(), candidates.partition[0], send.size());' \
  "zpp_sim_hpz_fingerprint_tests=* zpp_sim_tests=Hpz*"
# Only the paired partition is offered: a shifted backward among calls of one size fails.
mutant hpz-candidates src/engine/hpz_cache.cc \
  '    if (candidates.count == codec::kMaxHpzCandidates) break;' \
  '    break;' \
  "zpp_sim_tests=HpzChangedSequence*"
# Ranks whose hits chose different partitions are not reported.
mutant hpz-choices src/engine/hpz_cache.cc \
  '    if (records[r].choices != usual_choices) AddRank(other_choices, r);' \
  '    if (records[r].choices != usual_choices && r < 0) AddRank(other_choices, r);' \
  "zpp_sim_tests=HpzMisuseTest.RanksChoosing*"
# Both fingerprints (fill and hit) over `count` bytes instead of the shard's bytes (item 4).
mutant hpz-fingerprint-coverage src/engine/hpz_cache.cc \
  'size_t ShardBytes(const AllGatherArgs& args) { return args.count * plan::DtypeBytes(args.dtype); }' \
  'size_t ShardBytes(const AllGatherArgs& args) { return args.count; }' \
  "zpp_sim_hpz_fingerprint_tests=*"
mutant hpz-epoch-advance src/engine/hpz_cache.cc \
  'if (!started_ || epoch != epoch_) ZPP_CHECK(StartEpoch(context, epoch));' \
  'if (!started_) ZPP_CHECK(StartEpoch(context, epoch));' \
  "zpp_sim_hpz_fingerprint_tests=* zpp_sim_tests=Hpz*:TrainingStep*"
# The pass each call carries: the torch backend's per call, the step guard's skip (issue 44).
mutant hpz-torch-backward-pass plugin/torch/zpp_torch/backend.py \
  '    return (C.zppPassBackward if torch._C._current_graph_task_id() != -1' \
  '    return (C.zppPassForward if torch._C._current_graph_task_id() != -1' \
  "ctest=TrainHpzLoops@900"
mutant hpz-step-guard-skips tools/zpp_python/zpp_step_guard.py \
  '            parameter.grad = None' \
  '            pass' \
  "ctest=TrainHpzLoops@900"

# qgZ: the bits of each level (item 3), fp32 accumulation, the stochastic rounding stream.
mutant qgz-planner-intra-bits src/plan/planner.cc \
  '  plan.bits_intra = s.qgz_bits_intra;' \
  '  plan.bits_intra = s.qgz_bits_inter;' \
  "zpp_unit_planner_bits_tests=* zpp_sim_qgz_tests=*"
mutant decision-min-bytes src/plan/planner.cc \
  '      call.count * element * (all_reduce ? 1 : static_cast<uint64_t>(shape.world));' \
  '      call.count * element;' \
  "zpp_unit_tests=Planner*"
mutant decision-dtype src/plan/planner.cc \
  'dtype == ncclFloat32 || dtype == ncclFloat16 || dtype == ncclBfloat16;' \
  'dtype == ncclFloat32 || dtype == ncclFloat16 || dtype == ncclBfloat16 || dtype == ncclInt32;' \
  "zpp_unit_tests=Planner*"
mutant qgz-hierarchical-intra-at-inter-bits src/engine/reduce_scatter_plans.cc \
  $'  const int locals = backend.GroupSize(GroupKind::kIntraNode);\n  const Level intra = LevelOf(plan, plan.bits_intra, args);' \
  $'  const int locals = backend.GroupSize(GroupKind::kIntraNode);\n  const Level intra = LevelOf(plan, plan.bits_inter, args);' \
  "zpp_sim_qgz_tests=*"
mutant qgz-three-level-intra-at-inter-bits src/engine/reduce_scatter_plans.cc \
  $'  const int nodes = nodes_per_rack * racks;\n  const Level intra = LevelOf(plan, plan.bits_intra, args);' \
  $'  const int nodes = nodes_per_rack * racks;\n  const Level intra = LevelOf(plan, plan.bits_inter, args);' \
  "zpp_sim_qgz_tests=*"
mutant qgz-fp32-accumulation src/codec/dequantize_reduce.cc \
  'for (size_t i = 0; i < n; ++i) sum[i] = sum[i] + term[i];' \
  'for (size_t i = 0; i < n; ++i) sum[i] = Bf16ToFloat(FloatToBf16(sum[i] + term[i]));' \
  "zpp_codec_tests=Reduce*"
mutant qgz-stochastic-seed-rank src/codec/math/stochastic.h \
  'key = Mix64(key ^ (static_cast<uint64_t>(rank) + 0x632BE59BD9B4E019ull));' \
  'key = Mix64(key ^ (0 * static_cast<uint64_t>(rank) + 0x632BE59BD9B4E019ull));' \
  "zpp_codec_tests=Stochastic*"
mutant qgz-stochastic-seed-epoch src/codec/math/stochastic.h \
  'return Mix64(key ^ (epoch * kGolden64 + 0x8CB92BA72F3D8DD7ull));' \
  'return Mix64(key ^ (0 * epoch + 0x8CB92BA72F3D8DD7ull));' \
  "zpp_codec_tests=Stochastic*"
# format.h: a tail block ending inside a 32-run is unrotated whole (rotated values sharing a scale
# with unrotated ones lose most of their bits).
mutant rotation-tail-block src/codec/math/hadamard.h \
  '  return n % kRotationPoints == 0 ? n : n / block * block;' \
  '  return n + 0 * block;' \
  "zpp_codec_tests=RotationTail*:ReduceTest*"

# The settings every rank must share come from env_vars.def's Scope column (issue 47, item 3).
mutant config-agreed-scope src/config/env_vars.def \
  'ZPP_ENV_NUM(qwz_bits, "ZPP_QWZ_BITS", Bits, 8, 4, 8, Agreed,' \
  'ZPP_ENV_NUM(qwz_bits, "ZPP_QWZ_BITS", Bits, 8, 4, 8, Local,' \
  "zpp_sim_tests=ConfigAgreement*"
# Codecs (src/codec/math/block_math.h: the math the CPU reference and the CUDA kernels share).
mutant codec-rounding src/codec/math/block_math.h \
  'return ClampToQMax(static_cast<int>(RoundHalfEven(ToGrid(value, grid))), qmax);' \
  'return ClampToQMax(static_cast<int>(ToGrid(value, grid)), qmax);' \
  "zpp_codec_tests=*"
mutant codec-scale-floor src/codec/math/block_math.h \
  'return scale < smallest ? smallest : scale;' \
  'return scale < smallest ? scale : scale;' \
  "zpp_codec_tests=*"
# A NaN or Inf costs its own element only (format.h): DeepSpeed's torch.empty padding must not
# poison the real gradients in its block.
mutant codec-nonfinite-amax src/codec/math/block_math.h \
  '  return IsFiniteValue(value) ? MagnitudeBits(value) : 0u;' \
  '  return MagnitudeBits(value);' \
  "zpp_codec_tests=*NonFinite* zpp_sim_qgz_tests=*NaN*"
mutant codec-nonfinite-decodes-nan src/codec/math/block_math.h \
  '  return q == NonFiniteCode(qmax) ? FloatFromBits(kCanonicalNaNBits)' \
  '  return q == NonFiniteCode(qmax) - 1 ? FloatFromBits(kCanonicalNaNBits)' \
  "zpp_codec_tests=*NonFinite*"
mutant codec-int4-nibble-order src/codec/math/block_math.h \
  'return (static_cast<uint32_t>(low) & 0xFu) | ((static_cast<uint32_t>(high) & 0xFu) << 4);' \
  'return (static_cast<uint32_t>(high) & 0xFu) | ((static_cast<uint32_t>(low) & 0xFu) << 4);' \
  "zpp_codec_tests=*"

# Pass-through decisions in the hooks (plugin/collective_hooks.cc): op, group, capture.
mutant decision-op plugin/collective_hooks.cc \
  'if (static_cast<int>(op) < ncclNumOps) return zpp::plan::Reduction::kOther;' \
  'if (static_cast<int>(op) < ncclNumOps) return zpp::plan::Reduction::kSum;' \
  "zpp_plugin_decision_tests=*"
mutant decision-group plugin/collective_hooks.cc \
  '  if (group.depth > 0) {' \
  '  if (group.depth > 1) {' \
  "zpp_plugin_decision_tests=*"
mutant decision-capture plugin/collective_hooks.cc \
  '  if (zpp::StreamCapturing(stream)) return planned_pass_through(zppReasonCapture);' \
  '  if (false && zpp::StreamCapturing(stream)) return planned_pass_through(zppReasonCapture);' \
  "zpp_plugin_decision_tests=*"

# "Never hangs" (item 6): the sim rendezvous waiting without its deadline; the deadline tests
# then hang, and their own short timeout shows it.
# ZPP_TUNE=auto (issue 24): the ranks agree on the slowest figures, a call the table gives NCCL
# says so ('tuned'), and the drift watch waits and backs off as it says. (Only the user's
# techniques: DecisionTableTest.ChoosesOnlyTheUsersTechniques; two independent guards in the
# code, so breaking one alone changes nothing and is no mutation.)
mutant tune-agree-slowest src/tune/calibration.cc \
  ': std::min(slowest[i], theirs[i]);' \
  ': std::max(slowest[i], theirs[i]);' \
  "zpp_sim_tests=Tune*"
mutant tune-agreement-used src/tune/calibration.cc \
  '  agreed->inter = {slowest[2], slowest[3]};' \
  '  agreed->inter = mine.inter;' \
  "zpp_sim_tests=Tune*"
mutant tune-reason-tuned src/engine/engine.cc \
  '  if (tuned.kind == plan::PlanKind::kPassThrough) tuned.reason = zppReasonTuned;' \
  '' \
  "zpp_sim_tests=Tune*"
mutant tune-drift-epochs-in-a-row src/tune/drift_watch.cc \
  '  drifting_ = off ? drifting_ + 1 : 0;' \
  '  drifting_ = off ? drifting_ + 1 : drifting_;' \
  "zpp_unit_tests=DriftWatch*"
mutant tune-drift-backoff src/tune/drift_watch.cc \
  '  required_ = decisions_changed ? kDriftEpochs : std::min(2 * required_, kMostDriftEpochs);' \
  '  required_ = decisions_changed ? kDriftEpochs : kDriftEpochs;' \
  "zpp_unit_tests=DriftWatch*"
# The configuration parser (src/config/env_parse.cc; issue 25, item 7): every documented rule
# at its boundary, each caught by the per-variable cases of ConfigCaseTest.
mutant config-range-min src/config/env_parse.cc \
  '  if (*value < spec.min || *value > spec.max) {' \
  '  if (*value <= spec.min || *value > spec.max) {' \
  "zpp_unit_tests=*Config*"
mutant config-range-max src/config/env_parse.cc \
  '  if (*value < spec.min || *value > spec.max) {' \
  '  if (*value < spec.min || *value >= spec.max) {' \
  "zpp_unit_tests=*Config*"
mutant config-power-of-two src/config/env_parse.cc \
  '(*value & (*value - 1)) != 0' \
  '*value % 2 != 0' \
  "zpp_unit_tests=*Config*"
mutant config-bits src/config/env_parse.cc \
  '      (!zppBitsValid(static_cast<int>(*value)) || *value < spec.min || *value > spec.max)) {' \
  '      (*value < spec.min || *value > spec.max)) {' \
  "zpp_unit_tests=*Config*"
mutant config-byte-suffix src/config/env_parse.cc \
  '        shift = 20;' \
  '        shift = 10;' \
  "zpp_unit_tests=*Config*"
mutant config-byte-overflow src/config/env_parse.cc \
  '  if (*base > (std::numeric_limits<int64_t>::max() >> shift) ||' \
  '  if (*base > std::numeric_limits<int64_t>::max() ||' \
  "zpp_unit_tests=*Config*"
mutant config-bool-words src/config/env_parse.cc \
  '      for (std::string_view yes : {"1", "true", "yes", "on"}) {' \
  '      for (std::string_view yes : {"1", "true", "yes"}) {' \
  "zpp_unit_tests=*Config*"
mutant config-path-length src/config/env_parse.cc \
  '  } else if (s.size() >= kMaxPathLength) {' \
  '  } else if (s.size() >= kMaxPathLength - 1) {' \
  "zpp_unit_tests=*Config*"
mutant config-blank-is-unset src/config/env_parse.cc \
  '    if (value.empty()) continue;' \
  '' \
  "zpp_unit_tests=*Config*"
# Typos caught (issue 29, item 3): an unknown ZPP_* name is warned, with the closest known name
# (a transposition is one edit).
mutant config-unknown-names-warned src/config/config.cc \
  '    for (const std::string& warning : config::UnknownNameWarnings(config::ProcessZppNames())) {' \
  '    for (const std::string& warning : std::vector<std::string>{}) {' \
  "zpp_env_process_tests=*"
mutant config-typo-transposition src/config/env_names.cc \
  '        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);' \
  '        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 3);' \
  "zpp_unit_tests=EnvNames*"
# Nothing fallible on the collective path (issue 25, item 5): hpZ's counters and the fences'
# events made at set-up.
mutant engine-fence-events-at-set-up src/engine/engine.cc \
  '  ZPP_CHECK(pool_->Prepare(kReservedFenceEvents));' \
  '' \
  "zpp_sim_tests=HpzSetUp*Event*@120"
mutant engine-prepare-at-set-up src/engine/engine.cc \
  '  return hpz_ ? hpz_->Prepare() : ncclSuccess;' \
  '  return ncclSuccess;' \
  "zpp_sim_tests=HpzSetUp*@120"
# An aborted communicator's state is freed once its device work ran (issue 25, item 3).
mutant plugin-aborted-state-freed plugin/comm_hooks.cc \
  '        } else if (ended) {' \
  '        } else if (false) {' \
  "zpp_plugin_decision_tests=*Abort*"
# The trials commit to what they measured, not to the model's first choice; the warm-up epoch is
# not a trial's measurement; the tuner never goes below the user's bits; the model shortlists.
mutant tune-trial-commits-measured src/tune/decision_table.cc \
  '      if (us > 0 && (best == 0 || us < best)) {' \
  '      if (us > 0 && best == 0) {' \
  "zpp_unit_tests=TrialSchedule*"
mutant tune-trial-faster-epoch src/tune/trial_schedule.cc \
  'if (us > 0 && (best[e] == 0 || us < best[e])) best[e] = us;' \
  'if (us > 0 && best[e] == 0) best[e] = us;' \
  "zpp_unit_tests=TrialSchedule*"
mutant tune-trial-hpz-last src/tune/decision_table.cc \
  $'        std::stable_partition(shortlist.begin(), shortlist.end(),\n' \
  $'        if (false) std::stable_partition(shortlist.begin(), shortlist.end(),\n' \
  "zpp_unit_tests=TrialSchedule*"
mutant tune-trial-hpz-hits-counted src/tune/trial_schedule.cc \
  'means[e] *= (1.0 + hit_ratios[e]) / 2;' \
  'means[e] *= 1.0;' \
  "zpp_unit_tests=TrialLog*"
# Issue 45, item 2: the trials commit by the times the calls' events measured, the calls the
# table sent to NCCL among them; the hooks time a tuned communicator's calls outside groups and
# captures only, NCCL's too.
mutant auto-tuner-times-by-events src/engine/auto_tuner.cc \
  '    if (result == ncclSuccess) result = backend_.ElapsedUs(*timed.start, *timed.stop, &us);' \
  '    if (result == ncclSuccess) us = 100;' \
  "zpp_sim_tests=AutoTuner*"
mutant auto-tuner-times-nccls-calls src/engine/auto_tuner.cc \
  '  timed.decided = ran.kind != plan::PlanKind::kPassThrough || ran.reason == zppReasonTuned;' \
  '  timed.decided = ran.kind != plan::PlanKind::kPassThrough;' \
  "zpp_sim_tests=AutoTuner*"
mutant hooks-time-tuned-pass-through plugin/collective_hooks.cc \
  '    if (!timed || plan.reason != zppReasonTuned) return planned_pass_through(plan.reason);' \
  '    return planned_pass_through(plan.reason);' \
  "zpp_plugin_decision_tests=*Tuned*:*Timed*"
mutant hooks-time-outside-groups plugin/collective_hooks.cc \
  '  const bool timed = zpp->Tuned() && group.depth == 0 && !zpp::StreamCapturing(stream);' \
  '  const bool timed = zpp->Tuned();' \
  "zpp_plugin_decision_tests=*Tuned*:*Timed*"
# Issue 28: the tuner decides all-reduces among NCCL and the user's compressed all-reduce.
mutant tune-all-reduce-stays-static src/tune/decision_table.cc \
  '      enabled = user.qar ? kQar : 0;' \
  '      enabled = 0;' \
  "zpp_unit_tests=DecisionTable*:TrialSchedule* zpp_sim_tests=Tune*"
mutant tune-never-lossier src/tune/decision_table.cc \
  '    s.qwz_bits = 8;' \
  '    s.qwz_bits = 2;' \
  "zpp_unit_tests=TrialSchedule*"
mutant tune-shortlist src/tune/decision_table.cc \
  'us > kShortlistFactor * ranked.front().first' \
  'us > ranked.front().first' \
  "zpp_unit_tests=TrialSchedule*"
# The sim's world collectives move what they count (each piece crosses each node boundary once):
# a flat exchange carried twice plain's counted bytes over the testbed's links.
mutant sim-world-two-level src/sim/sim_backend.h \
  'return kind == GroupKind::kWorld && two_level_.usable();' \
  'return kind == GroupKind::kWorld && two_level_.usable() && false;' \
  "zpp_sim_tests=SimWireBytes*"
mutant sim-rendezvous-deadline src/transport/rendezvous.cc \
  '      changed_.wait_for(lock, deadline_, [&] { return slot.broken || slot.arrived == members_; });' \
  '      (changed_.wait(lock, [&] { return slot.broken || slot.arrived == members_; }), true);' \
  "zpp_sim_deadline_tests=*@30"

# Same decision on every rank: the settings every rank must share are compared across ranks.
mutant same-decision-config-agreement src/engine/config_agreement.cc \
  'const int64_t other = all[r * kAgreedCount + i];' \
  'const int64_t other = all[i];' \
  "zpp_sim_tests=ConfigAgreement*"

# The plugin under a real framework (issue 16).
# Finding an NCCL the framework loaded privately (RTLD_LOCAL, as pip PyTorch does).
mutant plugin-find-private-nccl src/nccl_runtime/nccl_functions.cc \
  '  const LoadedNccl* chosen = ChooseLoadedNccl(found);' \
  '  const LoadedNccl* chosen = nullptr;' \
  "zpp_nccl_finder_tests=*"
# Two NCCLs: the one the framework's library depends on.
mutant plugin-two-nccls-take-the-frameworks src/nccl_runtime/loaded_nccl.cc \
  '  if (needed == 1) {' \
  '  if (needed == 1 && false) {' \
  "zpp_nccl_finder_tests=*"
# The fence knows a stream by its handle, never by the wrapper's address.
mutant fence-stream-identity src/sim/sim_stream.h \
  '    return {reinterpret_cast<uintptr_t>(queue_.get()), true};' \
  '    return {reinterpret_cast<uintptr_t>(this), true};' \
  "zpp_fence_tests=EpochFence*"
# Abort keeps zpp's state (no free that waits for a stuck kernel, none under a running call).
mutant plugin-abort-frees-nothing plugin/comm_hooks.cc \
  '      Aborted().Add(std::move(zpp));' \
  '      zpp.reset();' \
  "zpp_plugin_decision_tests=*Abort*"
# A group end answering ncclInProgress is waited out, and zpp's deferred plans still run.
mutant plugin-group-end-in-progress plugin/comm_hooks.cc \
  '      result = WaitForNonblockingComms(*nccl);' \
  '      if (false) result = WaitForNonblockingComms(*nccl);' \
  "zpp_plugin_decision_tests=*InProgress*"
# A simulated group (ncclGroupSimulateEnd) runs nothing of zpp's and leaves no deferred call.
mutant plugin-simulated-group-clean plugin/comm_hooks.cc \
  '      for (const zpp::plugin::ZppCall& call : deferred) {' \
  $'      group.deferred = std::move(deferred);\n      for (const zpp::plugin::ZppCall& call : group.deferred) {' \
  "zpp_plugin_decision_tests=*Simulated*"
# A communicator zpp does not know (at an ended one's address) is NCCL's, never refused.
mutant plugin-unknown-comm-passes-through plugin/collective_hooks.cc \
  $'  zpp::ProcessStats().AddPassThrough(zppReasonInvalidComm, 0);\n  return forward();' \
  '  return zpp::plugin::Comms().WasRetired(comm) ? ncclInvalidArgument : forward();' \
  "zpp_plugin_decision_tests=*DestroyedOnes*"
# A sub-communicator's failure shows on the parent's ncclCommGetAsyncError.
mutant plugin-sub-communicator-error plugin/comm_hooks.cc \
  '      *asyncError = sub;' \
  '' \
  "zpp_plugin_decision_tests=*AsyncError*"
# Revoke and NCCL_SHRINK_ABORT end zpp's work on the communicator, as abort does.
mutant plugin-revoke-ends-zpp plugin/comm_hooks.cc \
  '    Forget(comm, /*abort=*/true, "revoked: calls pass through");' \
  '' \
  "zpp_plugin_decision_tests=*Revoke*"
mutant plugin-shrink-abort-ends-zpp plugin/comm_hooks.cc \
  '    if (shrinkFlags & NCCL_SHRINK_ABORT) {' \
  '    if (false) {' \
  "zpp_plugin_decision_tests=*Shrink*"
# A non-blocking communicator sets up at its first call (on a blocking duplicate).
mutant plugin-nonblocking-setup plugin/collective_hooks.cc \
  '    zpp::plugin::SetUpPending(*zpp::RealNccl(), state);' \
  '    if (false) zpp::plugin::SetUpPending(*zpp::RealNccl(), state);' \
  "zpp_plugin_decision_tests=*Nonblocking*"
# One rank's set-up failure is every rank's fallback.
mutant same-decision-setup-outcome src/topology/setup_outcome.cc \
  '    if (all[rank] != std::byte{1}) out->failed_ranks.push_back(rank);' \
  '    if (all[rank] != std::byte{1} && rank == exchange.rank()) out->failed_ranks.push_back(rank);' \
  "zpp_sim_tests=SetUpOutcome*@60"
# Staging memory (issue 16, item 5): a rank that decides alone on its failed reservation runs NCCL
# while its peers run zpp's plan; a bounded pool that allocates can fail on one rank only.
mutant same-decision-pool-reservation src/engine/pool_reservation.cc \
  '  if (!outcome.all_ok) {' \
  '  if (!reserved) {' \
  "zpp_sim_pool_tests=*@60"
mutant pool-never-allocates src/fence/buffer_pool.cc \
  '  if (!bounded_) return backend_.Allocate(size, out);' \
  '  return backend_.Allocate(size, out);' \
  "zpp_sim_pool_tests=*@60"
# A reservation where no plan can run (the old rule: any technique on reserves).
mutant pool-reserved-without-technique src/engine/pool_reservation.cc \
  $'  return 0;\n}' \
  $'  return settings.qwz || settings.hpz || settings.qgz ? pool_bytes : 0;\n}' \
  "zpp_sim_pool_tests=PoolReservation*"
# Power-of-two buffers again: hpZ's kept partitions cost up to 2x their bytes.
mutant pool-size-classes src/fence/buffer_pool.cc \
  '  return (bytes + step - 1) / step * step;' \
  '  return std::max(step, std::bit_ceil(bytes));' \
  "zpp_fence_tests=BufferPool*"

# The torch backend (plugin/torch/zpp_torch/backend.py, issue 25 item 7): every argument form
# torch passes, or a clear error; never a silently wrong result.
mutant torch-strided-output plugin/torch/zpp_torch/backend.py \
  $'            if target is not output:\n                output.copy_(target)\n\n        return run\n\n    def all_gather_single' \
  $'\n        return run\n\n    def all_gather_single' \
  "ctest=TorchBackendOps@300"
mutant torch-strided-input plugin/torch/zpp_torch/backend.py \
  $'        source, target = input_.contiguous(), _contiguous_target(output)\n        dtype = ' \
  $'        source, target = input_, _contiguous_target(output)\n        dtype = ' \
  "ctest=TorchBackendOps@300"
mutant torch-coalesced-every-pair plugin/torch/zpp_torch/backend.py \
  $'"allgather_into_tensor_coalesced")\n                for output, input_ in zip(outputs, inputs, strict=True)]' \
  $'"allgather_into_tensor_coalesced")\n                for output, input_ in zip(outputs[:1], inputs[:1])]' \
  "ctest=TorchBackendOps@300"
mutant torch-same-dtype plugin/torch/zpp_torch/backend.py \
  '        if output.dtype != input_.dtype:' \
  '        if False:' \
  "ctest=TorchBackendOps@300"
# What zpp does not reduce goes to the inner gloo group (issue 29, item 8): min/max/product too.
mutant torch-unsupported-op-on-gloo plugin/torch/zpp_torch/backend.py \
  '    return dtype in _REDUCE_SCATTER_DTYPES and kind in (' \
  '    return dtype in _REDUCE_SCATTER_DTYPES or kind in (' \
  "ctest=TorchBackendOps@300"
mutant torch-gather-on-gloo plugin/torch/zpp_torch/backend.py \
  '    gather = _delegated("gather")' \
  '' \
  "ctest=TorchBackendOps@300"
# torch's trampoline recursed on these properties (split_group, batch_isend_irecv).
mutant torch-split-group plugin/torch/zpp_torch/backend.py \
  $'    def supports_splitting(self):\n        return True' \
  $'    def supports_splitting(self):\n        return False' \
  "ctest=TorchBackendOps@300"
mutant torch-premul-factor plugin/torch/zpp_torch/backend.py \
  '    return C.zppCpuPreMulSum, _premul_factor(op)' \
  '    return C.zppCpuSum, 1.0' \
  "ctest=TorchBackendOps@300"
mutant torch-bytes-count plugin/torch/zpp_torch/backend.py \
  '            dtype, count = C.ncclUint8, source.numel() * source.element_size()' \
  '            dtype, count = C.ncclUint8, source.numel()' \
  "ctest=TorchBackendOps@300"
mutant torch-cpu-only plugin/torch/zpp_torch/backend.py \
  '        if tensor.device.type != "cpu":' \
  '        if False:' \
  "ctest=TorchBackendOps@300"
mutant torch-allreduce-avg plugin/torch/zpp_torch/backend.py \
  '            result = result / self._size' \
  '            result = result' \
  "ctest=TorchBackendOps@300"
# init_process_group(timeout=) bounds zpp's waits when shorter than ZPP_TIMEOUT (issue 29, item 7).
mutant torch-pg-timeout plugin/torch/zpp_torch/backend.py \
  '        check(LIB.zppCpuCommOpenWithTimeout(rank, size, timeout_ms, ctypes.byref(self._comm)),' \
  '        check(LIB.zppCpuCommOpenWithTimeout(rank, size, 0, ctypes.byref(self._comm)),' \
  "ctest=TorchRankKilled@420"
# Mismatched calls refused on every rank, both named; a dead peer seen at once (issue 29, items
# 6 and 7).
mutant transport-call-signature src/transport/ucp_transport.cc \
  '         ((static_cast<ucp_tag_t>(call.signature) << kSignatureShift) & kSignatureMask) |' \
  '' \
  "ctest=TorchMismatchedCalls@300"
mutant transport-notes src/transport/ucp_transport.cc \
  '    if (peer != rank_) SendNote(peer, mine);' \
  '    (void)peer;' \
  "ctest=TorchMismatchedCalls@300"
mutant transport-liveness src/transport/ucp_transport.cc \
  '    if (look_at_processes && peer.same_machine && peer.identity.Gone()) {' \
  '    if (false) {' \
  "ctest=TorchRankKilled@420"
# Quiet where nothing happens (issue 29, item 4): the settings' WARNs come at the first use, the
# debug file at the first line.
mutant config-warnings-at-exit plugin/stats_report.cc \
  '    if (config.stats == 0 && config.stats_dir.empty()) return;' \
  $'    ReportConfigOnce();\n    if (config.stats == 0 && config.stats_dir.empty()) return;' \
  "zpp_env_process_tests=EnvProcessTest.ALoadedButUnused*"
mutant log-file-at-configure src/log/log.cc \
  $'        settings.file_pattern.empty() ? "" : ExpandFilePattern(settings.file_pattern);\n' \
  $'        settings.file_pattern.empty() ? "" : ExpandFilePattern(settings.file_pattern);\n    if (!output.pending_path.empty()) output.file = std::fopen(output.pending_path.c_str(), "a");\n' \
  "zpp_unit_tests=LogFileTest.* zpp_env_process_tests=EnvProcessTest.ALoadedButUnused*"
# One report for the job (issue 29, item 1): every process writes its file, the hint names the
# dominant reason.
mutant stats-file-written plugin/torch/cpu_comm_registry.cc \
  '    if (!config.stats_dir.empty()) plugin::WriteStatsFile(rows, "cpu", config.stats_dir);' \
  '' \
  "ctest=TorchJobReport@300"
mutant report-hint tools/zpp_report.py \
  '    if count * 2 < total["all_calls"]:' \
  '    if True:' \
  "ctest=TorchJobReport@300"
mutant torch-broadcast-strided plugin/torch/zpp_torch/backend.py \
  $'                if buffer is not tensor:\n                    tensor.copy_(buffer)' \
  '' \
  "ctest=TorchBackendOps@300"

# A requested technique its topology leaves idle is said (issue 29, item 2).
mutant report-idle-hpz src/engine/idle_requests.cc \
  '  if (settings.hpz && !topology.hierarchical_allowed()) {' \
  '  if (false) {' \
  "zpp_topology_tests=IdleRequests*"
mutant report-qwz-one-node src/engine/idle_requests.cc \
  '  if (settings.qwz && one_node) {' \
  '  if (settings.qwz && !one_node) {' \
  "zpp_topology_tests=IdleRequests*"
# Issue 26, item 2: qgZ's error feedback adds the residual back, never a NaN, and only to the
# call it was made for.
mutant ef-residual-added src/codec/dequantize_reduce.cc \
  '    if (feedback.valid) {  // what the same call'"'"'s last requantization lost' \
  '    if (false) {' \
  "zpp_codec_tests=Feedback* zpp_sim_qgz_tests=ErrorFeedback*"
mutant ef-nonfinite-zero src/codec/dequantize_reduce.cc \
  '      other[i] = std::isfinite(loss) ? loss : 0.0f;' \
  '      other[i] = loss;' \
  "zpp_codec_tests=Feedback*"
mutant ef-same-call-only src/engine/step_slots.cc \
  '    if (entry.count == count && entry.dtype == dtype && entry.bytes == bytes) {' \
  '    if (entry.dtype == dtype) {' \
  "zpp_sim_qgz_tests=ErrorFeedback*"
mutant ef-written-marks-valid src/engine/engine.cc \
  '  if (result == ncclSuccess) slots->Written(slot);' \
  '' \
  "zpp_sim_qgz_tests=ErrorFeedback*"
# Issue 26, item 2: 2-bit gradients are read back as written (three levels, sign included).
mutant int2-sign-extends src/codec/math/block_math.h \
  'ZPP_HD int SignExtendInt2(uint32_t pair) { return static_cast<int>((pair & 0x3u) ^ 2u) - 2; }' \
  'ZPP_HD int SignExtendInt2(uint32_t pair) { return static_cast<int>(pair & 0x3u); }' \
  "zpp_codec_tests=FormatTest.*:AccuracyTest.*Int2*"
# Issue 26: 3-bit gradients and deltas (int3) are read back as written, sign included, and their
# payload holds whole groups of three bytes (cut at ceil(3 x count / 8), an encoder's last group
# would overrun the piece).
mutant int3-sign-extends src/codec/math/block_math.h \
  'ZPP_HD int SignExtendInt3(uint32_t triple) { return static_cast<int>((triple & 0x7u) ^ 4u) - 4; }' \
  'ZPP_HD int SignExtendInt3(uint32_t triple) { return static_cast<int>(triple & 0x7u); }' \
  "zpp_codec_tests=FormatTest.*:AccuracyTest.*Int3*"
mutant int3-whole-groups include/zpp/format.h \
  '  if (bits == 3) return 3u * ((count + 7u) / 8u);' \
  '  if (bits == 3) return (3u * count + 7u) / 8u;' \
  "zpp_codec_tests=FormatTest.*"
# Issue 26, item 1: qwZ deltas. A receiver checks the sender's reference before applying (a
# reference that drifted is loud); the sender's reference is the bits everyone applied, never its
# exact weights (sender and receiver arithmetic the same); a missing or fresh reference means a
# full send (a changed pattern never gets another layer's reference); the refresh sends in full;
# deltas stop once hpZ's agreed state has turned reuse off.
mutant delta-fingerprint-checked src/codec/weight_delta.cc \
  '    if (sent != held) {' \
  '    if (false) {' \
  "zpp_codec_tests=WeightDelta* zpp_sim_delta_tests=*Drifts*"
mutant delta-sender-same-arithmetic src/engine/weight_deltas.cc \
  '  if (result == ncclSuccess && reference != secondary) {' \
  $'  if (result == ncclSuccess && delta) {\n    result = backend.Memcpy(reference + shard * node, args.send, shard, stream);\n  }\n  if (result == ncclSuccess && reference != secondary) {' \
  "zpp_sim_delta_tests=*"
mutant delta-needs-its-reference src/engine/weight_deltas.cc \
  '  const bool delta = allowed && slot.lease != nullptr && slot.valid && !refresh;' \
  '  const bool delta = allowed && slot.lease != nullptr && !refresh;' \
  "zpp_sim_delta_tests=*ChangedPattern*:*Second*"
mutant delta-refresh-full src/engine/weight_deltas.cc \
  '  const bool refresh = refresh_ != 0 && epoch_() % refresh_ == 0;' \
  '  const bool refresh = false;' \
  "zpp_sim_delta_tests=*Refresh*"
mutant delta-stops-when-reuse-off src/engine/hpz_cache.cc \
  '    ZPP_CHECK(deltas_->RunFill(context, plan, args, !deltas_off_,' \
  '    ZPP_CHECK(deltas_->RunFill(context, plan, args, true,' \
  "zpp_sim_delta_tests=*Drifts*"
mutant fingerprint-says-varies src/codec/fingerprint.cc \
  '    varies |= FingerprintWordVaries(word, first, 8);' \
  '' \
  "zpp_codec_tests=*Fingerprint*"
# Issue 29, item 2: on one node the lossy techniques pass through unless forced (both plans).
# The compressed all-reduce (issue 28): the owner of a share decodes its own piece like every
# other rank; keeping its exact sum would part the replicas one rounding at a time.
mutant qar-owner-keeps-exact-sum src/engine/all_reduce_plans.cc \
  $'  // Inside the node, exact: every local rank\'s chunk to every local rank.\n' \
  $'  if (args.dtype == ncclFloat32 && b.owned != nullptr) {\n    const size_t mine = static_cast<size_t>(backend.GroupRank(g.across)) * g.share;\n    ZPP_CHECK(backend.Memcpy(b.node_chunk + mine * g.element, b.owned, g.share * g.element, context.stream));\n  }\n' \
  "zpp_sim_all_reduce_tests=QarTest.*"
# Its error feedback: each of the two inter-node quantizations keeps its own residual.
mutant qar-ef-residual-of-its-own-stage src/engine/all_reduce_plans.cc \
  'b.residuals.last(g.residual_piece)' \
  'b.residuals.first(g.residual_piece)' \
  "zpp_sim_all_reduce_tests=AllReduceFeedbackTest.*"
mutant plan-lossy-off-on-one-node src/plan/planner.cc \
  '  if (shape.nodes <= 1 && !s.lossy_on_one_node) return PassThrough(zppReasonOneNode, plain);' \
  '' \
  "zpp_unit_tests=Planner* zpp_sim_pool_tests=PoolReservation*"
# Issue 29, item 1: the progress line comes from rank 0 of the largest communicator only.
mutant progress-rank-zero plugin/progress_line.cc \
  '  return largest != nullptr && largest->rank == 0;' \
  '  return largest != nullptr;' \
  "zpp_plugin_stats_tests=ProgressLine*:StatsExit*"
# Issue 29, item 8: zpp-run --cpu turns gloo into zpp in every group's backend string.
mutant cpu-switch-maps-gloo tools/zpp_python/sitecustomize.py \
  '        return "cpu:zpp,cuda:gloo" if cuda_available else "zpp"' \
  '        return backend' \
  "ctest=ZppRun@120"

# ZPP_LOCAL_SIZE's simulated nodes are blocks of the launcher's global ranks, so that a
# sub-communicator (HSDP's replicate group) sits on its processes' nodes, not on one.
mutant topology-local-size-by-communicator-rank src/topology/grouping.cc \
  '      keys[r] = (by_launcher ? records[r].launcher_rank : static_cast<int64_t>(r)) / local_size;' \
  '      keys[r] = static_cast<int64_t>(r) / local_size;' \
  "zpp_topology_tests=*LocalSize*"

# ---- The run. ----

say() { printf '%s\n' "$*" >&2; }

# Python does the exact-text edits: no quoting of C++ through sed.
edit() {  # edit FILE ORIGINAL REPLACEMENT -> prints the occurrences replaced (0: not applied)
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, original, replacement = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(path).read()
count = text.count(original)
if count:
    open(path, "w").write(text.replace(original, replacement))
print(count)
EOF
}
occurrences() {
  python3 -c 'import sys; print(open(sys.argv[1]).read().count(sys.argv[2]))' "$1" "$2"
}

selected=()
for i in "${!NAMES[@]}"; do
  [[ -n $ONLY && ! ${NAMES[$i]} =~ $ONLY ]] && continue
  selected+=("$i")
done
((${#selected[@]} > 0)) || { say "mutants: no mutation matches '$ONLY'"; exit 2; }

# Every mutation must apply before anything is built: the list is checked as a whole.
stale=0
for i in "${selected[@]}"; do
  file=$ROOT/${FILES[$i]}
  if [[ ! -f $file ]] || (($(occurrences "$file" "${ORIGINALS[$i]}") == 0)); then
    say "mutants: mutation no longer applies: ${NAMES[$i]} (${FILES[$i]}): its original text is gone; update tools/mutants.sh"
    stale=1
  fi
done
((stale == 0)) || exit 2

# The one file changed at a time, and its pristine copy: restored on every way out.
current_file=""
backup=$(mktemp)
restore() {
  if [[ -n $current_file ]]; then
    cp "$backup" "$current_file"
    current_file=""
  fi
}
trap 'restore; rm -f "$backup"' EXIT
trap 'restore; exit 130' INT TERM

binaries_of() {  # the targets a mutation's tests need built
  local spec
  for spec in ${TESTS[$1]}; do
    if [[ ${spec%%=*} == ctest ]]; then
      printf '%s ' zpp_torch_package zpp  # the Python tests: the package and the libraries
    else
      printf '%s ' "${spec%%=*}"
    fi
  done
}

build() {  # build TARGET... (quiet; the log on failure)
  local log=$BUILD/mutants-build.log
  if ! cmake --build "$BUILD" -j "$JOBS" --target "$@" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    return 1
  fi
}

run_tests() {  # run_tests INDEX -> prints "binary: Test.Name" of the first failure, or nothing
  local spec
  for spec in ${TESTS[$1]}; do
    run_spec "$spec" && continue
    return
  done
}

# run_spec BINARY=FILTER[@SECONDS]: status 0 when it passes, else prints what failed.
run_spec() {
  local spec=$1 binary filter seconds=$TIMEOUT out status failed
  binary=${spec%%=*}
  filter=${spec#*=}
  if [[ $filter == *@* ]]; then
    seconds=${filter##*@}
    filter=${filter%@*}
  fi
  if [[ $binary == ctest ]]; then
    # A test ctest runs (the torch backend's Python tests): FILTER is its exact name.
    out=$(timeout "$seconds" ctest --test-dir "$BUILD" -R "^${filter}\$" --output-on-failure 2>&1)
    status=$?
    if ((status == 0)) && ! grep -q "100% tests passed, 0 tests failed out of 1" <<<"$out"; then
      status=1  # no such test: not a pass
    fi
    if ((status != 0)); then
      printf 'ctest: %s' "$([[ $status == 124 ]] && echo "timed out after ${seconds}s" ||
        echo "$filter")"
      return 1
    fi
    return 0
  fi
  out=$(timeout "$seconds" "$BUILD/bin/$binary" --gtest_filter="$filter" --gtest_brief=1 2>&1)
  status=$?
  if ((status != 0)); then
    failed=$(grep -m1 -oE '^\[  FAILED  \] [A-Za-z0-9_/.]+' <<<"$out" | sed 's/^\[  FAILED  \] //')
    if ((status == 124)); then
      failed="timed out after ${seconds}s"
    elif [[ -z $failed ]]; then
      failed="exit status $status"
    fi
    printf '%s: %s' "$binary" "$failed"
    return 1
  fi
}

start=$(date +%s)
if [[ ! -f $BUILD/CMakeCache.txt ]]; then
  say "mutants: configuring $BUILD (Release, CUDA off)"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZPP_ENABLE_CUDA=OFF \
    >/dev/null || exit 2
fi

# Baseline: every binary the list names, unmutated, must pass its filters, or a "caught" below
# would mean nothing.
targets=()
for i in "${selected[@]}"; do
  for b in $(binaries_of "$i"); do
    [[ " ${targets[*]} " == *" $b "* ]] || targets+=("$b")
  done
done
say "mutants: building ${targets[*]}"
build "${targets[@]}" || { say "mutants: the unmutated build failed"; exit 2; }
specs=()
for i in "${selected[@]}"; do
  for spec in ${TESTS[$i]}; do
    [[ " ${specs[*]} " == *" $spec "* ]] || specs+=("$spec")
  done
done
for spec in "${specs[@]}"; do
  if ! failure=$(run_spec "$spec"); then
    say "mutants: the unmutated code fails $spec ($failure); fix that first"
    exit 2
  fi
done
say "mutants: baseline passes ($(($(date +%s) - start)) s)"

rows=()
survived=0
broken=0
for i in "${selected[@]}"; do
  name=${NAMES[$i]}
  file=$ROOT/${FILES[$i]}
  t0=$(date +%s)
  cp "$file" "$backup"
  current_file=$file
  replaced=$(edit "$file" "${ORIGINALS[$i]}" "${REPLACEMENTS[$i]}")
  if ((replaced == 0)); then
    restore
    say "mutants: mutation no longer applies: $name (${FILES[$i]})"
    exit 2
  fi
  # shellcheck disable=SC2046
  if ! build $(binaries_of "$i"); then
    result="BUILD FAILED (the mutation does not compile: fix the list)"
    broken=1
  else
    caught=$(run_tests "$i")
    if [[ -n $caught ]]; then
      result=$caught
    else
      result="SURVIVED"
      survived=$((survived + 1))
    fi
  fi
  restore
  seconds=$(($(date +%s) - t0))
  say "mutants: $name: $result (${seconds}s)"
  rows+=("| $name | \`${FILES[$i]}\` | $replaced | $result | $seconds |")
done
total=$(($(date +%s) - start))

table() {
  echo "| mutation | file | sites | caught by (binary: first failing test) | seconds |"
  echo "|---|---|---:|---|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "${#rows[@]} mutations, $survived survived; $total s in all (\`tools/mutants.sh\`, $JOBS build jobs, $(nproc) cores)."
}
echo
table
if [[ -n $REPORT ]]; then
  # Whether the tree differed from its commit (the report itself aside): read before the report
  # is truncated below.
  dirty=""
  git -C "$ROOT" diff --quiet HEAD -- . ":(exclude)${REPORT#"$ROOT"/}" 2>/dev/null ||
    dirty=" plus uncommitted changes"
  {
    echo "# make mutants"
    echo
    echo "Each row breaks one contract on purpose (\`tools/mutants.sh\` lists the exact change and the"
    echo "tests expected to catch it) and names the first test that failed. Run $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "on commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$dirty."
    echo
    table
  } >"$REPORT"
  say "mutants: table written to $REPORT"
fi
((broken == 0)) || exit 2
((survived == 0)) || exit 1
