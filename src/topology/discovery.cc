#include "topology/discovery.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "log/log.h"
#include "topology/grouping.h"
#include "topology/rack_resolution.h"
#include "topology/rank_record.h"
#include "topology/str_cat.h"

namespace zpp::topology {

int64_t LauncherRank(const config::EnvLookup& env) {
  const std::optional<std::string> text = env("RANK");
  if (!text || text->empty() || text->size() > 18) return -1;
  int64_t rank = 0;
  for (const char c : *text) {
    if (c < '0' || c > '9') return -1;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

void LogFindings(const Topology& topology, int rank, bool hierarchy_requested) {
  for (const Finding& finding : topology.findings) {
    const char* text = finding.text.c_str();
    if (rank != 0) {
      ZPP_TRACE(kTopo, "%s", text);
      continue;
    }
    const bool warn = finding.kind == Finding::Kind::kInputProblem ||
                      (finding.kind == Finding::Kind::kShape && hierarchy_requested);
    if (warn) {
      ZPP_WARN("%s", text);
    } else {
      ZPP_INFO(kTopo, "%s", text);
    }
  }
}

Result DiscoverTopology(const Config& config, const config::EnvLookup& env, const LocalFacts& local,
                        ByteAllGather& exchange, Topology* topology) {
  const int rank = exchange.rank();
  const int size = exchange.size();
  ZPP_CHECK_ARG(size > 0 && rank >= 0 && rank < size,
                "topology exchange: rank %d of %d is not a rank of the communicator" ZPP_BUG_REPORT,
                rank, size);

  RankRecordInputs inputs;
  inputs.host = local.host;
  inputs.rack = ResolveRack(config, env, local.host.name);
  inputs.local_device = local.local_device;
  inputs.node_id_override = static_cast<int>(config.node_id);
  inputs.local_size_override = static_cast<int>(config.local_size);
  inputs.launcher_rank = LauncherRank(env);
  const RankRecord mine = MakeRankRecord(inputs, local.picture);

  std::vector<std::byte> all(static_cast<size_t>(size) * sizeof(RankRecord));
  const Result rc = exchange.AllGather(std::as_bytes(std::span(&mine, 1)), all);
  if (rc != ncclSuccess) {
    ZPP_WARN(
        "topology exchange failed (%s): zpp cannot plan for this communicator (under the plugin "
        "its calls pass to NCCL; a CPU communicator fails to connect); run with ZPP_DEBUG=INFO "
        "for the reason",
        ResultName(rc));
    return rc;
  }

  std::vector<RankRecord> records;
  records.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    std::string why;
    const std::optional<RankRecord> record = DecodeRankRecord(
        std::span(all).subspan(static_cast<size_t>(r) * sizeof(RankRecord), sizeof(RankRecord)),
        &why);
    if (!record) {
      *topology = FallbackTopology(size, StrCat("the topology record of rank ", r, " ", why));
      LogFindings(*topology, rank, config.hpz != 0 || config.qgz != 0);
      return ncclSuccess;
    }
    records.push_back(*record);
  }
  *topology = BuildTopology(records);
  LogFindings(*topology, rank, config.hpz != 0 || config.qgz != 0);
  return ncclSuccess;
}

}  // namespace zpp::topology
