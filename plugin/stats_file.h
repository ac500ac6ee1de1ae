// ZPP_STATS_DIR: a process's statistics as one JSON file in the job's folder, for zpp-run's
// report of the whole job (tools/zpp_report.py). One file per process and library (libzpp.so's
// NCCL communicators, libzpp_cpu.so's CPU ones), written at exit, never on a collective path.
#pragma once

#include <string>
#include <vector>

#include "plugin/stats_table.h"

namespace zpp::plugin {

// The file's text: {"format": 1, "host", "pid", "source", "settings": {ZPP_*: value},
// "communicators": [{"id", "rank", "nranks", "state", "calls": {path: n}, "input_bytes",
// "pass_through": {reason: n}, "sent_bytes": {link: bytes}, "plain_off_node_bytes", "hpz_hits",
// "hpz_misses", "hpz_verify_failures", "host_waits"}]}.
std::string StatsJson(const std::vector<CommStatsRow>& rows, const std::string& source);

// Writes StatsJson into `folder` as <host>-<pid>-<source>.json (whole, through a rename);
// a WARN when it cannot.
void WriteStatsFile(const std::vector<CommStatsRow>& rows, const std::string& source,
                    const std::string& folder);

}  // namespace zpp::plugin
