// The nccl-tests-style sweep: sizes from --minbytes to --maxbytes by --stepfactor, for each
// operation, mode and dtype. Size is the whole gathered (or scattered) buffer, as in nccl-tests;
// sizes too small to give every rank one element are skipped, as there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/zpp_bench/bench_types.h"
#include "bench/zpp_bench/collective_runner.h"

namespace zpp::bench {

struct SweepOptions {
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t{256} << 20;
  uint64_t step_factor = 2;
  std::vector<plan::CollectiveOp> ops;
  std::vector<std::string> modes;  // step::ParseMode names
  std::vector<ncclDataType_t> dtypes;
  plan::Settings base;  // block and min_bytes (ZPP_BLOCK, ZPP_MIN_BYTES)
  int warmup = 1;
  int iterations = 5;
};

// The sizes the sweep visits, in bytes.
std::vector<uint64_t> SweepSizes(const SweepOptions& options);

// Runs every case; `on_row` sees each row as it is measured (the table prints as it goes).
// A mode with no technique for an operation (qgZ for all-gathers, qwZ and hpZ for reduce-
// scatters) is the plain operation and is not repeated.
Result RunSweep(const SweepOptions& options, CollectiveRunner& runner,
                const std::function<void(const Row&)>& on_row, std::vector<Row>* rows);

}  // namespace zpp::bench
