#include "plugin/progress_line.h"

#include <algorithm>
#include <cinttypes>

#include "common/text.h"
#include "stats/stats.h"

namespace zpp::plugin {

bool SpeaksForJob(const std::vector<CommStatsRow>& rows) {
  const CommStatsRow* largest = nullptr;
  for (const CommStatsRow& row : rows) {
    if (largest == nullptr || row.nranks > largest->nranks) largest = &row;
  }
  return largest != nullptr && largest->rank == 0;
}

bool ProgressDue(uint64_t step, uint64_t every) { return every > 0 && step % every == 0; }

std::string FormatProgressLine(uint64_t step, const std::vector<CommStatsRow>& rows) {
  zppStats_t total{};
  int nranks = 0;
  for (const CommStatsRow& row : rows) {
    nranks = std::max(nranks, row.nranks);
    for (int path = 0; path < zppNumPaths; ++path) total.calls[path] += row.stats.calls[path];
    for (int reason = 0; reason < zppNumReasons; ++reason)
      total.passthrough[reason] += row.stats.passthrough[reason];
    for (int link = 0; link < zppNumLinks; ++link)
      total.sent_bytes[link] += row.stats.sent_bytes[link];
    total.plain_off_node_bytes += row.stats.plain_off_node_bytes;
    total.hpz_hits += row.stats.hpz_hits;
    total.hpz_misses += row.stats.hpz_misses;
    total.hpz_verify_failures += row.stats.hpz_verify_failures;
  }
  uint64_t calls = 0;
  uint64_t planned = 0;
  std::string paths;
  for (int path = 0; path < zppNumPaths; ++path) {
    calls += total.calls[path];
    if (path == zppPathPassThrough || total.calls[path] == 0) continue;
    planned += total.calls[path];
    text::Appendf(&paths, "%s%s %" PRIu64, paths.empty() ? "" : ", ", PathName(path),
                  total.calls[path]);
  }
  std::string line;
  text::Appendf(&line,
                "zpp progress: step %" PRIu64 ", rank 0/%d, %zu communicator(s): %" PRIu64
                " calls, %" PRIu64 " through zpp's plans",
                step, nranks, rows.size(), calls, planned);
  if (!paths.empty()) line += " (" + paths + ")";
  std::string reasons;
  for (int reason = 0; reason < zppNumReasons; ++reason) {
    if (total.passthrough[reason] == 0) continue;
    text::Appendf(&reasons, "%s%s %" PRIu64, reasons.empty() ? "" : ", ",
                  PassThroughReasonName(reason), total.passthrough[reason]);
  }
  text::Appendf(&line, ", %" PRIu64 " passed through", total.calls[zppPathPassThrough]);
  if (!reasons.empty()) line += " (" + reasons + ")";
  const uint64_t off_node = total.sent_bytes[zppLinkInterNode] + total.sent_bytes[zppLinkInterRack];
  text::Appendf(&line, "; off-node bytes %.1f MiB", static_cast<double>(off_node) / (1 << 20));
  if (total.plain_off_node_bytes > 0) {
    text::Appendf(&line, ", %.3f of plain",
                  static_cast<double>(off_node) / static_cast<double>(total.plain_off_node_bytes));
  }
  if (total.hpz_hits + total.hpz_misses + total.hpz_verify_failures > 0) {
    text::Appendf(&line,
                  "; hpZ %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64 " verification failures",
                  total.hpz_hits, total.hpz_misses, total.hpz_verify_failures);
  }
  return line;
}

}  // namespace zpp::plugin
