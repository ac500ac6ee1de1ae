#include "plugin/stats_table.h"

#include <cinttypes>

#include "common/enum_names.h"
#include "common/text.h"
#include "stats/stats.h"

namespace zpp::plugin {

const char* PathName(int path) {
  // zppPath_t's values are 0 .. zppNumPaths - 1, in this order (include/zpp/zpp.h).
  static constexpr std::string_view kNames[] = {"pass-through", "qwZ", "hpZ", "qgZ", "qAR"};
  static_assert(std::size(kNames) == zppNumPaths);
  return NameIn(kNames, path, "?").data();  // literals: end in '\0'
}

std::string FormatStatsTable(const std::vector<CommStatsRow>& rows) {
  std::string out = "zpp stats: per communicator and technique\n";
  // Launches per technique: zpp's plans keep them fixed per call whatever the rank count.
  text::Appendf(&out, "%5s %9s %-13s %10s %14s %16s %9s %12s\n", "comm", "rank", "technique",
                "calls", "input bytes", "off-node bytes", "kernels", "collectives");
  for (const CommStatsRow& row : rows) {
    const std::string rank = std::to_string(row.rank) + "/" + std::to_string(row.nranks);
    for (int path = 0; path < zppNumPaths; ++path) {
      if (row.stats.calls[path] == 0) continue;
      text::Appendf(
          &out,
          "%5" PRIu64 " %9s %-13s %10" PRIu64 " %14" PRIu64 " %16s %9" PRIu64 " %12" PRIu64 "\n",
          row.id, rank.c_str(), PathName(path), row.stats.calls[path], row.stats.input_bytes[path],
          "", row.stats.kernel_launches[path], row.stats.collective_launches[path]);
    }
    const uint64_t off_node =
        row.stats.sent_bytes[zppLinkInterNode] + row.stats.sent_bytes[zppLinkInterRack];
    text::Appendf(&out, "%5" PRIu64 " %9s %-13s %10s %14s %16" PRIu64 "  (%s)\n", row.id,
                  rank.c_str(), "all", "", "", off_node, row.zpp_state.c_str());
    std::string reasons;
    for (int reason = 0; reason < zppNumReasons; ++reason) {
      if (row.stats.passthrough[reason] == 0) continue;
      text::Appendf(&reasons, " %s=%" PRIu64, PassThroughReasonName(reason),
                    row.stats.passthrough[reason]);
    }
    if (!reasons.empty())
      text::Appendf(&out, "%5" PRIu64 " pass-through reasons:%s\n", row.id, reasons.c_str());
    if (row.stats.hpz_hits + row.stats.hpz_misses + row.stats.hpz_verify_failures > 0) {
      text::Appendf(
          &out,
          "%5" PRIu64 " hpZ hits %" PRIu64 ", misses %" PRIu64 ", verify failures %" PRIu64
          ", kept at most %.1f MiB, host waits %" PRIu64 " (one per step epoch)\n",
          row.id, row.stats.hpz_hits, row.stats.hpz_misses, row.stats.hpz_verify_failures,
          static_cast<double>(row.stats.hpz_kept_bytes_peak) / (1 << 20), row.stats.host_waits);
    }
  }
  return out;
}

}  // namespace zpp::plugin
