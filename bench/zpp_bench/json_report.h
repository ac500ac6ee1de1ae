// zpp-bench --json FILE: the table and the step figures through nlohmann_json. Top level:
// machine, backend, nccl_version, time_note, cluster, rows, steps (fields in README
// "Benchmarks"; tests/bench checks them).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/zpp_bench/bench_types.h"
#include "bench/zpp_bench/collective_runner.h"
#include "log/check.h"
#include "step/step_replay.h"

namespace zpp::bench {

nlohmann::json RowJson(const Row& row);
nlohmann::json StepJson(const step::StepFigures& figures);

nlohmann::json Report(const CollectiveRunner& runner, const sim::ClusterLayout& layout,
                      const std::vector<Row>& rows, const std::vector<step::StepFigures>& steps);

Result WriteJson(const nlohmann::json& report, const std::string& path);

}  // namespace zpp::bench
