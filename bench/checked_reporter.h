// A benchmark run that can fail: Google Benchmark exits 0 even when a benchmark reported an
// error or missed its goal, so a ctest run of it could only ever pass. This reporter prints as
// the console one does, remembers every run that errored (SkipWithError) or took more CPU time
// per iteration than `goal_ns` (0: no goal), and Main returns 1 with one line per failure.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

namespace zpp::bench {

class CheckedReporter : public benchmark::ConsoleReporter {
 public:
  explicit CheckedReporter(double goal_ns) : goal_ns_(goal_ns) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) {
        failures_.push_back(run.benchmark_name() + ": " + run.error_message);
      } else if (goal_ns_ > 0 && run.run_type == Run::RT_Iteration && run.iterations > 0) {
        const double ns = run.cpu_accumulated_time / static_cast<double>(run.iterations) * 1e9;
        if (ns > goal_ns_) {
          failures_.push_back(run.benchmark_name() + ": " + std::to_string(ns) +
                              " ns per call, over the goal of " + std::to_string(goal_ns_));
        }
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  int ExitCode() const {
    for (const std::string& failure : failures_)
      std::fprintf(stderr, "FAILED %s\n", failure.c_str());
    return failures_.empty() ? 0 : 1;
  }

 private:
  const double goal_ns_;
  std::vector<std::string> failures_;
};

// BENCHMARK_MAIN with the checks.
inline int Main(int argc, char** argv, double goal_ns) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  CheckedReporter reporter(goal_ns);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return reporter.ExitCode();
}

}  // namespace zpp::bench
