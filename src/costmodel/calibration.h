// Calibrating the cost model from measured figures: a JSON file (from a GPU run, or written by
// hand) with any of
//   {"intra": {"gbps": 2400, "latency_us": 2}, "inter": {"gbps": 100, "latency_us": 5},
//    "kernels": {"quantize_gbps": ..., "dequantize_gbps": ..., "reduce_gbps": ...,
//                "copy_gbps": ...}}
// Fields present replace the model's; absent ones keep it.
#pragma once

#include <string>

#include "costmodel/cost_model.h"
#include "log/check.h"

namespace zpp::costmodel {

Result ApplyCalibrationText(const std::string& json_text, ClusterModel* model);
Result LoadCalibration(const std::string& path, ClusterModel* model);

}  // namespace zpp::costmodel
