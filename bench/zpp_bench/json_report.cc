#include "bench/zpp_bench/json_report.h"

#include <algorithm>
#include <fstream>

#include "log/log.h"

namespace zpp::bench {

nlohmann::json RowJson(const Row& row) {
  const Measurement& m = row.measured;
  nlohmann::json json = {
      {"op", OpName(row.what.op)},
      {"mode", row.what.mode},
      {"dtype", DtypeName(row.what.dtype)},
      {"bytes", row.bytes},
      {"count", row.count},
      {"time_us", m.time_us},
      {"algbw_gbps", row.algbw_gbps},
      {"busbw_gbps", row.busbw_gbps},
      {"bytes_intra_node", m.bytes_intra_node},
      {"bytes_inter_node", m.bytes_inter_node},
      {"bytes_inter_rack", m.bytes_inter_rack},
      {"rel_l2_err", m.rel_l2_err},
      {"max_abs_err", m.max_abs_err},
      {"plan", m.plan},
      {"qwz_bits", row.what.settings.qwz ? row.what.settings.qwz_bits : 0},
      {"qgz_bits_intra", row.what.settings.qgz ? row.what.settings.qgz_bits_intra : 0},
      {"qgz_bits_inter", row.what.settings.qgz ? row.what.settings.qgz_bits_inter : 0},
  };
  // null where the plan is lossy: #wrong is defined for lossless plans only.
  json["wrong"] = m.wrong ? nlohmann::json(*m.wrong) : nlohmann::json(nullptr);
  // Launches per call: what the plan costs in kernel launches, whatever the cluster's size.
  json["host_us"] = m.host_us ? nlohmann::json(*m.host_us) : nlohmann::json(nullptr);
  json["kernel_launches"] =
      m.kernel_launches ? nlohmann::json(*m.kernel_launches) : nlohmann::json(nullptr);
  json["collective_launches"] =
      m.collective_launches ? nlohmann::json(*m.collective_launches) : nlohmann::json(nullptr);
  return json;
}

nlohmann::json StepJson(const step::StepFigures& f) {
  return {
      {"model", f.model},
      {"config", f.config},
      {"inter_node_bytes_per_step", f.inter_node_bytes_per_step},
      {"relative_volume", f.relative_volume},
      // The larger of the two; both are given as well.
      {"rel_l2_err", std::max(f.weight_rel_l2, f.gradient_rel_l2)},
      {"weight_rel_l2_err", f.weight_rel_l2},
      {"gradient_rel_l2_err", f.gradient_rel_l2},
      {"replayed_elements", f.replayed_elements},
      {"scale_factor", f.scale_factor},
      {"buffers", f.buffers},
      {"micro_batches", f.micro_batches},
      {"hpz_hits", f.hpz_hits},
      {"hpz_verify_failures", f.hpz_verify_failures},
  };
}

nlohmann::json Report(const CollectiveRunner& runner, const sim::ClusterLayout& layout,
                      const std::vector<Row>& rows, const std::vector<step::StepFigures>& steps) {
  nlohmann::json report;
  report["machine"] = runner.machine();
  report["backend"] = runner.backend();
  report["nccl_version"] = runner.nccl_version();
  report["time_note"] = runner.time_note();
  report["cluster"] = {
      {"ranks", layout.world_size()},
      {"nodes", layout.node_count()},
      {"racks", layout.rack_of_node.empty() ? 1
                                            : 1 + *std::max_element(layout.rack_of_node.begin(),
                                                                    layout.rack_of_node.end())}};
  report["rows"] = nlohmann::json::array();
  for (const Row& row : rows) report["rows"].push_back(RowJson(row));
  report["steps"] = nlohmann::json::array();
  for (const step::StepFigures& figures : steps) report["steps"].push_back(StepJson(figures));
  return report;
}

Result WriteJson(const nlohmann::json& report, const std::string& path) {
  std::ofstream file(path);
  ZPP_CHECK_ARG(file.good(), "zpp-bench: cannot write %s", path.c_str());
  file << report.dump(2) << "\n";
  file.close();
  ZPP_CHECK_ARG(!file.fail(), "zpp-bench: writing %s failed", path.c_str());
  return ncclSuccess;
}

}  // namespace zpp::bench
