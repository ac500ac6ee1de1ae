#include "bench/zpp_bench/table.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace zpp::bench {
namespace {

__attribute__((format(printf, 1, 2))) std::string Format(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string text(static_cast<size_t>(length > 0 ? length : 0), '\0');
  std::vsnprintf(text.data(), text.size() + 1, format, args);
  va_end(args);
  return text;
}

}  // namespace

std::string TableHeader() {
  return Format("#%13s %12s %9s %14s %16s %10s %8s %8s %12s %12s %12s %9s %9s %7s  %s\n", "size",
                "count", "type", "op", "mode", "time", "algbw", "busbw", "intra-node", "inter-node",
                "inter-rack", "rel-L2", "max-abs", "#wrong", "plan") +
         Format("#%13s %12s %9s %14s %16s %10s %8s %8s %12s %12s %12s %9s %9s %7s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "(B sent)", "(B sent)",
                "(B sent)", "", "", "");
}

std::string TableRow(const Row& row) {
  const std::string wrong =
      row.measured.wrong ? std::to_string(*row.measured.wrong) : std::string("-");
  const Measurement& m = row.measured;
  return Format(
      "%14llu %12llu %9s %14s %16s %10.1f %8.3f %8.3f %12llu %12llu %12llu %9.2e %9.2e "
      "%7s  %s\n",
      static_cast<unsigned long long>(row.bytes), static_cast<unsigned long long>(row.count),
      DtypeName(row.what.dtype), OpName(row.what.op), row.what.mode.c_str(), m.time_us,
      row.algbw_gbps, row.busbw_gbps, static_cast<unsigned long long>(m.bytes_intra_node),
      static_cast<unsigned long long>(m.bytes_inter_node),
      static_cast<unsigned long long>(m.bytes_inter_rack), m.rel_l2_err, m.max_abs_err,
      wrong.c_str(), m.plan.c_str());
}

std::string StepTableHeader() {
  return Format("#%7s %18s %16s %10s %10s %10s %12s %9s %11s\n", "model", "config",
                "inter-node B/step", "relative", "weight-L2", "grad-L2", "scaled 1/x", "hpZ hits",
                "verify-fail");
}

std::string StepTableRow(const step::StepFigures& f) {
  return Format("%8s %18s %16.0f %10.3f %9.2f%% %9.2f%% %12.0f %9llu %11llu\n", f.model.c_str(),
                f.config.c_str(), f.inter_node_bytes_per_step, f.relative_volume,
                100 * f.weight_rel_l2, 100 * f.gradient_rel_l2, f.scale_factor,
                static_cast<unsigned long long>(f.hpz_hits),
                static_cast<unsigned long long>(f.hpz_verify_failures));
}

std::string StepSummaryLine(const step::StepFigures& f, double plain_relative_volume) {
  // Rounded as printed, and + 0.0: plain against itself shows 0.0, never -0.0.
  const double saved =
      plain_relative_volume > 0
          ? std::round(1000 * (1 - f.relative_volume / plain_relative_volume)) / 10 + 0.0
          : 0;
  return Format(
      "%-18s inter-node volume %.3f of plain's %.3f per step (%5.1f%% saved); rel. L2 error: "
      "weights %.2f%%, gradients %.2f%%\n",
      f.config.c_str(), f.relative_volume, plain_relative_volume, saved, 100 * f.weight_rel_l2,
      100 * f.gradient_rel_l2);
}

}  // namespace zpp::bench
