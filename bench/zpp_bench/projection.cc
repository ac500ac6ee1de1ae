#include "bench/zpp_bench/projection.h"

#include <algorithm>
#include <cstdio>

#include "costmodel/calibration.h"
#include "costmodel/step_projection.h"
#include "step/mode.h"
#include "step/model_shapes.h"

namespace zpp::bench {
namespace {

bool Given(const ProjectionCli& cli, const char* flag) {
  return cli.app != nullptr && cli.app->count(flag) > 0;
}

}  // namespace

void AddProjectionOptions(CLI::App& app, ProjectionCli& cli) {
  cli.app = &app;
  const auto positive = CLI::PositiveNumber;
  app.add_option("--inter-gbps", cli.inter_gbps,
                 "projection: each node's bandwidth to the "
                 "network, Gbit/s (all its NICs)")
      ->check(positive)
      ->capture_default_str();
  app.add_option("--intra-gbps", cli.intra_gbps,
                 "projection: each GPU's bandwidth inside the "
                 "node, Gbit/s")
      ->check(positive)
      ->capture_default_str();
  app.add_option("--inter-latency-us", cli.inter_latency_us, "projection: per step (default 5)")
      ->check(positive);
  app.add_option("--intra-latency-us", cli.intra_latency_us, "projection: per step (default 2)")
      ->check(positive);
  app.add_option("--quantize-gbps", cli.quantize_gbps,
                 "projection: quantize kernel, GB/s read+written (default 1000, an assumption)")
      ->check(positive);
  app.add_option("--dequantize-gbps", cli.dequantize_gbps, "projection: (default 1000, assumed)")
      ->check(positive);
  app.add_option("--reduce-gbps", cli.reduce_gbps,
                 "projection: dequantize-reduce kernels (default 1000, assumed)")
      ->check(positive);
  app.add_option("--copy-gbps", cli.copy_gbps, "projection: device copies (default 2000, assumed)")
      ->check(positive);
  app.add_option("--calibration", cli.calibration,
                 "projection: JSON of measured link and kernel figures (see "
                 "src/costmodel/calibration.h)");
}

Result ModelFrom(const ProjectionCli& cli, int nodes, int gpus_per_node,
                 costmodel::ClusterModel* out) {
  costmodel::ClusterModel model =
      costmodel::DefaultModel(nodes, gpus_per_node, cli.intra_gbps, cli.inter_gbps);
  if (!cli.calibration.empty()) {
    ZPP_CHECK(costmodel::LoadCalibration(cli.calibration, &model));
    if (Given(cli, "--inter-gbps")) model.inter.gbps = cli.inter_gbps;
    if (Given(cli, "--intra-gbps")) model.intra.gbps = cli.intra_gbps;
  }
  if (cli.inter_latency_us > 0) model.inter.latency_us = cli.inter_latency_us;
  if (cli.intra_latency_us > 0) model.intra.latency_us = cli.intra_latency_us;
  if (cli.quantize_gbps > 0) model.kernels.quantize_gbps = cli.quantize_gbps;
  if (cli.dequantize_gbps > 0) model.kernels.dequantize_gbps = cli.dequantize_gbps;
  if (cli.reduce_gbps > 0) model.kernels.reduce_gbps = cli.reduce_gbps;
  if (cli.copy_gbps > 0) model.kernels.copy_gbps = cli.copy_gbps;
  *out = model;
  return ncclSuccess;
}

Result RunProjection(const ProjectionCli& cli, int nodes, int gpus_per_node,
                     const std::vector<std::string>& models,
                     const std::vector<std::string>& configs) {
  costmodel::ClusterModel model;
  ZPP_CHECK(ModelFrom(cli, nodes, gpus_per_node, &model));
  std::printf(
      "# PROJECTION (alpha-beta cost model, not a measurement): %d nodes x %d GPUs, inter-node "
      "%.0f Gbit/s per node (%.1f us/step), intra-node %.0f Gbit/s per GPU (%.1f us/step); codec "
      "kernels %.0f/%.0f/%.0f GB/s quantize/dequantize/reduce, copies %.0f GB/s%s. "
      "Communication and codec time of one ZeRO-3 step (bf16), without overlap with compute.\n",
      nodes, gpus_per_node, model.inter.gbps, model.inter.latency_us, model.intra.gbps,
      model.intra.latency_us, model.kernels.quantize_gbps, model.kernels.dequantize_gbps,
      model.kernels.reduce_gbps, model.kernels.copy_gbps,
      cli.calibration.empty() && cli.quantize_gbps == 0
          ? " (kernel figures ASSUMED: not measured on a GPU yet)"
          : "");
  std::vector<std::string> names = models.empty() ? step::BuiltinModelNames() : models;
  std::vector<std::string> modes = configs.empty() ? step::StandardStepModes() : configs;
  modes.erase(std::remove(modes.begin(), modes.end(), "plain"), modes.end());
  modes.insert(modes.begin(), "plain");  // first: the speed-ups are against it
  for (const std::string& name : names) {
    step::Model shapes;
    ZPP_CHECK(step::ResolveModel(name, &shapes));
    std::vector<uint64_t> units;
    for (const step::ModelUnit& unit : shapes.units) units.push_back(unit.elements);
    std::printf("\n# model %s: %.2fB parameters, %zu units\n", shapes.name.c_str(),
                static_cast<double>(shapes.Elements()) * 1e-9, units.size());
    std::printf("#%17s %12s %12s %12s %10s %10s\n", "config", "comm (ms)", "codec (ms)",
                "total (ms)", "speed-up", "volume");
    double plain_us = 0;
    for (const std::string& config : modes) {
      plan::Settings settings;
      settings.min_bytes = 0;
      ZPP_CHECK(step::ParseMode(config, &settings));
      const costmodel::StepProjection step =
          costmodel::ProjectStep(units, ncclBfloat16, settings, model);
      if (config == "plain") plain_us = step.total_us();
      std::printf("%18s %12.1f %12.1f %12.1f %9.2fx %10.3f\n", step::ModeName(settings).c_str(),
                  step.comm_us / 1e3, step.codec_us / 1e3, step.total_us() / 1e3,
                  step.total_us() > 0 ? plain_us / step.total_us() : 0, step.relative_volume);
    }
  }
  return ncclSuccess;
}

}  // namespace zpp::bench
