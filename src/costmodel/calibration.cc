#include "costmodel/calibration.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "log/log.h"

namespace zpp::costmodel {
namespace {

// Sets *field from json[key] when present; false when present but not a positive number.
bool Take(const nlohmann::json& json, const char* key, double* field) {
  if (!json.is_object() || !json.contains(key)) return true;
  const nlohmann::json& value = json.at(key);
  if (!value.is_number() || value.get<double>() < 0) return false;
  *field = value.get<double>();
  return true;
}

}  // namespace

Result ApplyCalibrationText(const std::string& json_text, ClusterModel* model) {
  const nlohmann::json json = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  ZPP_CHECK_ARG(json.is_object(),
                "calibration: not a JSON object; nothing is applied (its fields are in "
                "src/costmodel/calibration.h)");
  ClusterModel m = *model;
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& intra = json.contains("intra") ? json["intra"] : none;
  const nlohmann::json& inter = json.contains("inter") ? json["inter"] : none;
  const nlohmann::json& kernels = json.contains("kernels") ? json["kernels"] : none;
  const bool ok =
      Take(intra, "gbps", &m.intra.gbps) && Take(intra, "latency_us", &m.intra.latency_us) &&
      Take(inter, "gbps", &m.inter.gbps) && Take(inter, "latency_us", &m.inter.latency_us) &&
      Take(kernels, "quantize_gbps", &m.kernels.quantize_gbps) &&
      Take(kernels, "dequantize_gbps", &m.kernels.dequantize_gbps) &&
      Take(kernels, "reduce_gbps", &m.kernels.reduce_gbps) &&
      Take(kernels, "copy_gbps", &m.kernels.copy_gbps);
  ZPP_CHECK_ARG(ok, "calibration: every figure must be a number >= 0; nothing is applied");
  *model = m;
  return ncclSuccess;
}

Result LoadCalibration(const std::string& path, ClusterModel* model) {
  std::ifstream file(path);
  ZPP_CHECK_ARG(
      file.good(),
      "calibration: cannot read %s; nothing is applied (check the path and its permissions)",
      path.c_str());
  std::stringstream text;
  text << file.rdbuf();
  return ApplyCalibrationText(text.str(), model);
}

}  // namespace zpp::costmodel
