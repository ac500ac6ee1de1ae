// zpp-bench: nccl-tests-style sweep of all-gather and reduce-scatter for plain NCCL and each zpp
// mode, a ZeRO-3 step replay (--step-model), and the cost model's projection (--project).
//   zpp-bench --backend sim --nodes 2 --gpus-per-node 4 -b 64K -e 16M -f 4 --json out.json
//   zpp-bench --no-sweep --step-model 125M,1.3B,7B
//   zpp-bench --project --nodes 48 --gpus-per-node 8 --inter-gbps 100 --intra-gbps 2400
//             --step-model 7B
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/zpp_bench/bench_cli.h"
#include "bench/zpp_bench/collective_runner.h"
#include "bench/zpp_bench/json_report.h"
#include "bench/zpp_bench/projection.h"
#include "bench/zpp_bench/step_mode.h"
#include "bench/zpp_bench/sweep.h"
#include "bench/zpp_bench/table.h"
#include "config/config.h"
#include "step/mode.h"

namespace zpp::bench {
namespace {

ncclDataType_t DtypeOf(const std::string& name) {
  if (name == "float") return ncclFloat32;
  if (name == "half") return ncclFloat16;
  return ncclBfloat16;
}

plan::Settings BaseSettings(const BenchCli& cli) {
  const Config& config = GetConfig();
  plan::Settings settings;
  settings.block = cli.block > 0 ? cli.block : static_cast<int>(config.block);
  settings.min_bytes = static_cast<uint64_t>(config.min_bytes);
  if (!cli.zpp_min_bytes.empty()) ParseSize(cli.zpp_min_bytes, &settings.min_bytes);
  return settings;
}

SweepOptions SweepFrom(const BenchCli& cli) {
  SweepOptions sweep;
  ParseSize(cli.min_bytes, &sweep.min_bytes);
  ParseSize(cli.max_bytes, &sweep.max_bytes);
  sweep.step_factor = cli.step_factor;
  for (const std::string& op : cli.ops) {
    sweep.ops.push_back(op == "allgather"       ? plan::CollectiveOp::kAllGather
                        : op == "reducescatter" ? plan::CollectiveOp::kReduceScatter
                                                : plan::CollectiveOp::kAllReduce);
  }
  sweep.modes = cli.modes;
  for (const std::string& dtype : cli.dtypes) sweep.dtypes.push_back(DtypeOf(dtype));
  sweep.base = BaseSettings(cli);
  sweep.warmup = cli.warmup;
  sweep.iterations = cli.iterations;
  return sweep;
}

// The demo's closing lines: for each configuration of the last model, volume saved and error.
void PrintSummary(const std::vector<step::StepFigures>& steps) {
  if (steps.empty()) return;
  const std::string& model = steps.back().model;
  double plain = 0;
  for (const step::StepFigures& f : steps) {
    if (f.model == model && f.config == "plain") plain = f.relative_volume;
  }
  std::printf(
      "\n== summary: inter-node bytes per ZeRO-3 step of %s against plain (sim, exact "
      "byte counts)\n",
      model.c_str());
  for (const step::StepFigures& f : steps) {
    if (f.model == model) std::fputs(StepSummaryLine(f, plain).c_str(), stdout);
  }
}

// Step mode: ZeRO-3 steps of --step-model replayed on the simulated cluster, a row per model
// and configuration.
Result RunSteps(const BenchCli& cli, const sim::ClusterLayout& layout,
                std::vector<step::StepFigures>* steps) {
  StepModeOptions step_options;
  step_options.models = cli.step_models;
  step_options.configs = cli.step_configs;
  if (step_options.configs.empty()) {
    step_options.configs = step::StandardStepModes();
    for (const std::string& mode : step::StatefulStepModes()) step_options.configs.push_back(mode);
  }
  step_options.layout = layout;
  step_options.base = BaseSettings(cli);
  // Every unit through its plan, as docs/benchmarks.md's step table.
  step_options.base.min_bytes = 0;
  step_options.steps = cli.steps;
  step_options.max_elements = cli.step_elements;
  step::ParseInputBuffers(cli.step_buffers, &step_options.buffers);  // checked by the CLI
  step_options.micro_batches = cli.micro_batches;
  std::printf(
      "\n# step mode: ZeRO-3 steps (forward all-gathers, backward all-gathers, "
      "reduce-scatters), bf16, %d steps of %d micro-batch(es), %s buffers, volume per "
      "optimizer step from step 2 on; models scaled down by one factor per model to at most "
      "%llu parameters\n",
      cli.steps, cli.micro_batches, cli.step_buffers.c_str(),
      static_cast<unsigned long long>(cli.step_elements));
  std::fputs(StepTableHeader().c_str(), stdout);
  auto print = [](const step::StepFigures& figures) {
    std::fputs(StepTableRow(figures).c_str(), stdout);
    std::fflush(stdout);
  };
  return RunStepMode(step_options, print, steps);
}

int Main(int argc, char** argv) {
  CLI::App app{"zpp-bench: all-gather and reduce-scatter, plain NCCL against zpp's modes"};
  BenchCli cli;
  AddSweepOptions(app, cli);
  ProjectionCli projection;
  AddProjectionOptions(app, projection);
  CLI11_PARSE(app, argc, argv);

  if (cli.project) {
    return RunProjection(projection, cli.nodes, cli.gpus_per_node, cli.step_models,
                         cli.step_configs) == ncclSuccess
               ? 0
               : 1;
  }
  if (cli.nodes % cli.racks != 0) {
    std::fprintf(stderr, "zpp-bench: --racks %d must divide --nodes %d\n", cli.racks, cli.nodes);
    return 2;
  }
  RunnerOptions runner_options;
  runner_options.backend = cli.backend;
  runner_options.layout = sim::ClusterLayout::Uniform(cli.nodes, cli.gpus_per_node, cli.racks);
  runner_options.rank = cli.rank;
  runner_options.dir = cli.dir;
  std::unique_ptr<CollectiveRunner> runner;
  if (MakeRunner(runner_options, &runner) != ncclSuccess) {
    std::fprintf(stderr, "zpp-bench: backend '%s' is not available here\n", cli.backend.c_str());
    return 2;
  }
  if (cli.backend == "nccl" && cli.rank != 0) {
    // Every rank runs the same sweep; rank 0 reports it.
    if (std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
    cli.json_path.clear();
  }
  std::printf("# zpp-bench: backend %s, %d nodes x %d ranks, %d rack(s); %s\n",
              runner->backend().c_str(), cli.nodes, cli.gpus_per_node, cli.racks,
              runner->machine().c_str());
  std::printf("# %s\n", runner->time_note().c_str());

  std::vector<Row> rows;
  if (!cli.no_sweep) {
    const SweepOptions sweep = SweepFrom(cli);
    std::printf("# block %d, plain below %llu bytes (ZPP_MIN_BYTES); warm-up %d, median of %d\n",
                sweep.base.block, static_cast<unsigned long long>(sweep.base.min_bytes),
                sweep.warmup, sweep.iterations);
    std::fputs(TableHeader().c_str(), stdout);
    auto print = [](const Row& row) {
      std::fputs(TableRow(row).c_str(), stdout);
      std::fflush(stdout);
    };
    if (RunSweep(sweep, *runner, print, &rows) != ncclSuccess) return 1;
  }

  std::vector<step::StepFigures> steps;
  if (!cli.step_models.empty() && RunSteps(cli, runner_options.layout, &steps) != ncclSuccess) {
    return 1;
  }

  if (!cli.json_path.empty()) {
    const nlohmann::json report = Report(*runner, runner_options.layout, rows, steps);
    if (WriteJson(report, cli.json_path) != ncclSuccess) return 1;
    std::printf("\n# JSON written to %s\n", cli.json_path.c_str());
  }
  PrintSummary(steps);
  return 0;
}

}  // namespace
}  // namespace zpp::bench

int main(int argc, char** argv) { return zpp::bench::Main(argc, argv); }
