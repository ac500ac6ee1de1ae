// Runs zpp-launch from a test, bounded: the job's exit status, its stderr and how long it took.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace zpp::test {

struct JobResult {
  int exit_code = -1;  // -1: it had to be killed at the limit
  double seconds = 0;
  std::string stderr_text;
  std::string stdout_text;  // UCX logs here
};

// `args` follow the launcher's path; `env` (NAME, VALUE) is added to this environment. The job
// is killed (and the result says so) after `limit_seconds`.
JobResult RunLauncher(const std::vector<std::string>& args,
                      const std::vector<std::pair<std::string, std::string>>& env,
                      double limit_seconds);

// A fresh directory under TMPDIR (or /tmp), removed with everything in it when this goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace zpp::test
