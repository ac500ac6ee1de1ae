#include "bench/zpp_bench/sweep.h"

#include "codec/element_io.h"
#include "step/mode.h"

namespace zpp::bench {
namespace {

bool ModeApplies(const plan::Settings& settings, plan::CollectiveOp op) {
  const bool plain = !settings.qwz && !settings.hpz && !settings.qgz && !settings.qar;
  if (plain) return true;
  switch (op) {
    case plan::CollectiveOp::kAllGather:
      return step::TouchesAllGather(settings);
    case plan::CollectiveOp::kReduceScatter:
      return step::TouchesReduceScatter(settings);
    case plan::CollectiveOp::kAllReduce:
      return step::TouchesAllReduce(settings);
  }
  return false;
}

}  // namespace

std::vector<uint64_t> SweepSizes(const SweepOptions& options) {
  std::vector<uint64_t> sizes;
  for (uint64_t size = options.min_bytes; size <= options.max_bytes;) {
    sizes.push_back(size);
    const uint64_t next = options.step_factor > 1 ? size * options.step_factor : 0;
    if (next <= size) break;  // factor 1 (one size) or overflow
    size = next;
  }
  return sizes;
}

Result RunSweep(const SweepOptions& options, CollectiveRunner& runner,
                const std::function<void(const Row&)>& on_row, std::vector<Row>* rows) {
  const uint64_t n = static_cast<uint64_t>(runner.world_size());
  for (ncclDataType_t dtype : options.dtypes) {
    const uint64_t element = NcclTypeBytes(dtype);
    for (plan::CollectiveOp op : options.ops) {
      for (const std::string& mode : options.modes) {
        plan::Settings settings = options.base;
        const bool tune = mode == kAutoMode;
        const bool through_zpp = mode == kPassThroughMode;
        ZPP_CHECK(step::ParseMode(tune ? "zero++" : through_zpp ? "plain" : mode, &settings));
        if (!ModeApplies(settings, op)) continue;
        for (uint64_t size : SweepSizes(options)) {
          // nccl-tests' size is the whole buffer: n pieces of a gather or scatter, one all-reduce.
          const bool all_reduce = op == plan::CollectiveOp::kAllReduce;
          const uint64_t count = size / element / (all_reduce ? 1 : n);
          if (count == 0) continue;
          Row row;
          row.what.op = op;
          row.what.mode = tune          ? std::string(kAutoMode)
                          : through_zpp ? std::string(kPassThroughMode)
                                        : step::ModeName(settings);
          row.what.settings = settings;
          row.what.tune = tune;
          row.what.through_zpp = through_zpp;
          row.what.dtype = dtype;
          row.what.count = count;
          row.what.warmup = options.warmup;
          row.what.iterations = options.iterations;
          row.count = count * (all_reduce ? 1 : n);
          row.bytes = row.count * element;
          ZPP_CHECK(runner.Run(row.what, &row.measured));
          const double seconds = row.measured.time_us * 1e-6;
          row.algbw_gbps = seconds > 0 ? static_cast<double>(row.bytes) / seconds / 1e9 : 0;
          row.busbw_gbps = row.algbw_gbps * BusBandwidthFactor(op, static_cast<int>(n));
          on_row(row);
          rows->push_back(std::move(row));
        }
      }
    }
  }
  return ncclSuccess;
}

}  // namespace zpp::bench
