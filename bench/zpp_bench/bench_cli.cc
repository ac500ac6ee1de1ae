#include "bench/zpp_bench/bench_cli.h"

#include <cctype>
#include <charconv>

#include "bench/zpp_bench/bench_types.h"
#include "step/mode.h"

namespace zpp::bench {

bool ParseSize(const std::string& text, uint64_t* bytes) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [rest, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || rest == text.data()) return false;
  int shift = 0;
  if (rest != end) {
    if (rest + 1 != end) return false;
    switch (std::toupper(static_cast<unsigned char>(*rest))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        return false;
    }
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return false;
  *bytes = value << shift;
  return true;
}

namespace {

// The sweep's numbers, as nccl-tests' getopt reads them: the last one given wins, so a script can
// append its own to a default command line (tools/gpu-bench.sh "$@").
constexpr CLI::MultiOptionPolicy kLastWins = CLI::MultiOptionPolicy::TakeLast;

CLI::Validator SizeCheck() {
  return CLI::Validator(
      [](const std::string& text) {
        uint64_t bytes = 0;
        return ParseSize(text, &bytes) ? std::string() : "a size: 8, 64K, 256M, 1G";
      },
      "SIZE");
}

CLI::Validator ModeCheck() {
  return CLI::Validator(
      [](const std::string& text) {
        plan::Settings settings;
        return text == kAutoMode || text == kPassThroughMode ||
                       step::ParseMode(text, &settings) == ncclSuccess
                   ? std::string()
                   : "a mode: plain, zero++, auto, passthrough, or qwz[4|8], hpz, "
                     "qgz[<intra>/<inter>], "
                     "qar[4|8], ef joined by '+'";
      },
      "MODE");
}

void AddSizeOptions(CLI::App& app, BenchCli& cli) {
  app.add_option("-b,--minbytes", cli.min_bytes, "smallest size (whole buffer), e.g. 8, 64K")
      ->multi_option_policy(kLastWins)
      ->check(SizeCheck())
      ->capture_default_str();
  app.add_option("-e,--maxbytes", cli.max_bytes, "largest size")
      ->multi_option_policy(kLastWins)
      ->check(SizeCheck())
      ->capture_default_str();
  app.add_option("-f,--stepfactor", cli.step_factor, "size multiplier between sizes")
      ->multi_option_policy(kLastWins)
      ->check(CLI::Range(uint64_t{1}, uint64_t{1024}))
      ->capture_default_str();
}

// What each case runs: operations, modes, element types and the plans' settings.
void AddCaseOptions(CLI::App& app, BenchCli& cli) {
  app.add_option("--ops", cli.ops, "operations")
      ->delimiter(',')
      ->check(CLI::IsMember({"allgather", "reducescatter", "allreduce"}))
      ->capture_default_str();
  app.add_option("--modes", cli.modes,
                 "modes, comma list: plain (NCCL's collective untouched), zero++, auto "
                 "(zero++'s techniques, ZPP_TUNE=auto), passthrough (plain through zpp's hooks, "
                 "--backend nccl), or techniques joined by '+': "
                 "qwz[4|8], hpz, qgz[<intra>/<inter>], qar[4|8] (all-reduce), ef")
      ->delimiter(',')
      ->check(ModeCheck())
      ->capture_default_str();
  app.add_option("-d,--dtypes", cli.dtypes, "element types")
      ->delimiter(',')
      ->check(CLI::IsMember({"float", "half", "bfloat16"}))
      ->capture_default_str();
  app.add_option("-w,--warmup_iters", cli.warmup, "untimed calls per case")
      ->multi_option_policy(kLastWins)
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_option("-n,--iters", cli.iterations, "timed calls per case (the median is reported)")
      ->multi_option_policy(kLastWins)
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_flag("--no-sweep", cli.no_sweep, "skip the size sweep (step mode or projection only)");
  app.add_option("--block", cli.block, "elements per quantization block (default: ZPP_BLOCK)")
      ->check(CLI::IsMember({32, 64, 128, 256, 512, 1024, 2048, 4096}));
  app.add_option("--zpp-min-bytes", cli.zpp_min_bytes,
                 "buffers below this go through plain (default: ZPP_MIN_BYTES)")
      ->check(SizeCheck());
}

// The cluster: simulated, or this process's rank of a real one.
void AddClusterOptions(CLI::App& app, BenchCli& cli) {
  app.add_option("--backend", cli.backend, "sim (simulated cluster, CPU) or nccl (GPU)")
      ->check(CLI::IsMember({"sim", "nccl"}))
      ->capture_default_str();
  app.add_option("--nodes", cli.nodes, "nodes of the cluster")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--gpus-per-node", cli.gpus_per_node, "ranks per node")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--racks", cli.racks, "racks (nodes divided evenly)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--rank", cli.rank,
                 "--backend nccl: this process's rank of nodes x gpus-per-node (rank 0 prints)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--dir", cli.dir, "--backend nccl: a folder every rank sees (the NCCL id)")
      ->capture_default_str();
}

// Step mode, the projection and the JSON file.
void AddStepOptions(CLI::App& app, BenchCli& cli) {
  app.add_option("--step-model", cli.step_models,
                 "step mode: models to replay a ZeRO-3 step of, comma list of 125M, 1.3B, 7B "
                 "or files of 'name elements' lines")
      ->delimiter(',');
  app.add_option("--step-configs", cli.step_configs,
                 "step mode: configurations (modes; default: docs/benchmarks.md's step table)")
      ->delimiter(',')
      ->check(ModeCheck());
  app.add_option("--steps", cli.steps, "step mode: steps replayed (volume from step 2 on)")
      ->check(CLI::Range(3, 100))
      ->capture_default_str();
  app.add_option("--step-elements", cli.step_elements,
                 "step mode: the replayed model's size; every unit is scaled by one factor")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 32))
      ->capture_default_str();
  app.add_option("--step-buffers", cli.step_buffers,
                 "step mode: all-gather buffers, dedicated (one per layer) or framework (a "
                 "caching allocator's recycled blocks, input inside the output as FSDP2)")
      ->check(CLI::IsMember({"dedicated", "framework"}))
      ->capture_default_str();
  app.add_option("--micro-batches", cli.micro_batches,
                 "step mode: forward and backward passes per optimizer step (one step epoch)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--json", cli.json_path, "also write the results as JSON to this file");
  app.add_flag("--project", cli.project,
               "print the cost model's projected step communication time for --step-model on "
               "--nodes x --gpus-per-node (no measurement)");
}

}  // namespace

void AddSweepOptions(CLI::App& app, BenchCli& cli) {
  AddSizeOptions(app, cli);
  AddCaseOptions(app, cli);
  AddClusterOptions(app, cli);
  AddStepOptions(app, cli);
}

}  // namespace zpp::bench
