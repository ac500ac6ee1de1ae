#include "plugin/stats_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/env_spec.h"
#include "log/log.h"
#include "stats/stats.h"

namespace zpp::plugin {
namespace {

constexpr const char* kPathNames[zppNumPaths] = {"pass-through", "qwz", "hpz", "qgz", "qar"};
constexpr const char* kLinkNames[zppNumLinks] = {"intra_node", "inter_node", "inter_rack"};

std::string Host() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

nlohmann::json CommunicatorJson(const CommStatsRow& row) {
  const zppStats_t& stats = row.stats;
  nlohmann::json comm = {{"id", row.id},
                         {"rank", row.rank},
                         {"nranks", row.nranks},
                         {"state", row.zpp_state},
                         {"plain_off_node_bytes", stats.plain_off_node_bytes},
                         {"hpz_hits", stats.hpz_hits},
                         {"hpz_misses", stats.hpz_misses},
                         {"hpz_verify_failures", stats.hpz_verify_failures},
                         {"hpz_skipped_steps", stats.hpz_skipped_steps},
                         {"host_waits", stats.host_waits},
                         {"qgz_ef_calls", stats.qgz_ef_calls},
                         {"qgz_ef_without", stats.qgz_ef_without},
                         {"qwz_delta_calls", stats.qwz_delta_calls},
                         {"qwz_delta_full", stats.qwz_delta_full}};
  for (int path = 0; path < zppNumPaths; ++path) {
    comm["calls"][kPathNames[path]] = stats.calls[path];
    comm["input_bytes"][kPathNames[path]] = stats.input_bytes[path];
  }
  comm["pass_through"] = nlohmann::json::object();
  for (int reason = 0; reason < zppNumReasons; ++reason) {
    if (stats.passthrough[reason] == 0) continue;
    const char* name = PassThroughReasonName(reason);
    comm["pass_through"][name != nullptr ? name : std::to_string(reason)] =
        stats.passthrough[reason];
  }
  for (int link = 0; link < zppNumLinks; ++link) {
    comm["sent_bytes"][kLinkNames[link]] = stats.sent_bytes[link];
  }
  return comm;
}

}  // namespace

std::string StatsJson(const std::vector<CommStatsRow>& rows, const std::string& source) {
  nlohmann::json file = {{"format", 1}, {"host", Host()}, {"pid", getpid()}, {"source", source}};
  const Config& config = GetConfig();
  file["settings"] = nlohmann::json::object();
  for (const config::EnvSpec& spec : config::AllEnvSpecs()) {
    file["settings"][std::string(spec.name)] = config.ValueText(spec.name);
  }
  file["communicators"] = nlohmann::json::array();
  for (const CommStatsRow& row : rows) file["communicators"].push_back(CommunicatorJson(row));
  return file.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void WriteStatsFile(const std::vector<CommStatsRow>& rows, const std::string& source,
                    const std::string& folder) {
  const std::string name =
      folder + "/" + Host() + "-" + std::to_string(getpid()) + "-" + source + ".json";
  const std::string partial = name + ".partial";
  std::string text;
  try {
    text = StatsJson(rows, source);
  } catch (const std::exception& error) {  // at exit: never let one escape
    ZPP_WARN(
        "ZPP_STATS_DIR: the statistics could not be written: %s; this process leaves no "
        "statistics file",
        error.what());
    return;
  }
  {
    std::ofstream out(partial);
    out << text;
    if (!out.good()) {
      ZPP_WARN(
          "ZPP_STATS_DIR: cannot write %s: %s; this process leaves no statistics file (check that "
          "the folder exists, is writable and has space)",
          partial.c_str(), std::strerror(errno));
      return;
    }
  }
  if (std::rename(partial.c_str(), name.c_str()) != 0) {
    ZPP_WARN(
        "ZPP_STATS_DIR: cannot rename %s: %s; the statistics stay in that file, which zpp-run "
        "--stats does not read (check the folder's permissions)",
        partial.c_str(), std::strerror(errno));
  }
}

}  // namespace zpp::plugin
